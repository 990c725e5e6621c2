// Package bundle builds the console's script and stylesheet from their
// sources in origin/console/web with esbuild's Go API and compares or
// writes the result to origin/console/assets/dist: content-hashed files
// and a manifest naming them. The build program (../../build, run by
// `make console-assets`) and the assets package's tests use it, so the
// server binary never links esbuild.
package bundle
