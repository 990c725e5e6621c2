// Package twemoji serves the Twemoji image set from inside Pictor and injects
// it into rendered pages: Handler answers /twemoji/<codepoints>.svg from an
// archive embedded in the binary, and Script returns the snippet that swaps
// the emoji of a loaded page for those images. Renders never reach a CDN.
// The graphics are CC-BY 4.0 and the parser MIT; see NOTICE.
package twemoji
