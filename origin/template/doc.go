// Package template stores versioned Handlebars templates with their render
// defaults, checks their syntax in the wasm sandbox when they are saved (and,
// parsed again in the host, that they call no helper the sandbox lacks), and
// expands a template version with values into the HTML and options of an
// image.
package template
