// Package codec converts rendered masters with libvips (through govips):
// PNG to JPEG or WebP, PNG recompression for storage, and stacking capture
// strips. It owns libvips' process-wide start-up.
package codec
