// Package template stores versioned Handlebars templates with their render
// defaults, checks their syntax in the wasm sandbox when they are saved, and
// expands a template version with values into the HTML and options of an
// image.
package template
