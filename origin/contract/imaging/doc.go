// Package imaging is the image processing both tiers share, with libvips
// (through govips): Parse and Apply give the GET-time transformations of an
// image URL (crop, resize, density, format), and ToJPEG, ToWebP, CompactPNG
// and JoinVertical are the origin's conversions of rendered masters. The edge
// and the origin apply the same code, so a rendition is the same bytes
// whichever tier makes it.
package imaging
