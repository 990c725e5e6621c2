// Package assets serves the console's script and stylesheet, embedded
// from dist/: files named by a hash of their contents, so they are
// answered `immutable`, and a manifest from each logical name
// ("console.js") to its file. Path gives the URL pages link to; Handler
// answers /console/assets/. `make console-assets` rebuilds dist/ from
// origin/console/web (internal/bundle), and a test proves the committed
// files are what those sources build.
package assets
