// Package transform applies the GET-time transformations of an image URL to
// a rendered PNG master. Parse validates a query into canonical Options,
// Options.Key names the rendition for the edge caches, and Apply crops,
// resizes, sets the density and encodes with libvips (govips).
//
// # Sizes
//
// width and height are 1 to 5000; 0 means "not set". One alone keeps the
// aspect ratio (the other side rounds half up, at least 1 pixel). Both give
// exactly width×height: the image is scaled to cover that box and the
// overflow is cropped evenly (libvips thumbnail, crop=centre), so nothing is
// stretched and no bars are added. To keep another part, crop first, for
// example aspect_ratio=1200_630&y_origin=start&width=1200&height=630.
// Upscaling is allowed: the caller gets the size asked for. A resized result
// is at most 5000×5000, so width alone whose height would pass 5000 is a 400
// (ErrTooLarge) naming width. Results that are not resized (a format
// conversion, a crop) are bounded by the master and by the format (WebP
// 16383, JPEG 65535 pixels per side).
//
// # Crop
//
// Per axis (x shown; y is the same with y_1, y_2, crop_height, y_origin),
// every value is pixels ("120") or a percentage of the image ("33%",
// "12.5%", kept to 1/10000 of a percent); percentages round half up to
// pixels, and the crop happens before the resize.
//   - x_1 and x_2 bound the crop to [x_1, x_2); x_1 alone runs to the right
//     edge, x_2 alone starts at the left edge.
//   - crop_width sets the width: after x_1, before x_2, or aligned by
//     x_origin (start, center or end; center by default, leaning to the
//     start by half a pixel).
//   - aspect_ratio=W_H (positive integers; "W:H" too) derives the size that
//     crop_width/crop_height (or x_1 with x_2) leave open, or, when neither
//     is given, takes the largest W:H box inside the region, aligned by
//     x_origin/y_origin, or at x_1 / against x_2.
//   - 400 for: x_origin with x_1 or x_2; x_1, x_2 and crop_width together;
//     x_origin without crop_width or aspect_ratio (it would do nothing);
//     aspect_ratio with both a fixed width and a fixed height; x_2 not after
//     x_1 in the same unit; zero sizes; percentages over 100%. What depends
//     on the image (a crop past its edge, an empty crop) is found by Apply:
//     ErrCropOutOfBounds, also a 400 naming the parameters.
//
// # Density, download, PDF
//
// dpi is 30 to 600 and changes metadata only: the PNG pHYs chunk (pixels per
// metre) or a JFIF APP0 segment (dots per inch) in a JPEG. The compressed
// pixels are the same bytes as without it. WebP has no density field, so
// dpi is accepted and dropped for .webp. Without dpi a PNG keeps the
// master's pHYs (libvips writes 72 dpi when it has none) and a JPEG has no
// JFIF segment, as the origin's own conversions. dl is 1/true/on or
// 0/false/off (anything else is a 400); dl=1 sets Options.Download and never
// changes the bytes. A PDF accepts dl only.
//
// # Query syntax
//
// Unknown parameters are ignored; when a parameter repeats the last one
// counts; an empty value is a 400. Percent-encoding is decoded and a '%' not
// followed by two hex digits stands for itself, so "33%" and "33%25" are the
// same value. Names are case-sensitive.
//
// # Keys
//
// Key is the same for every spelling of the same transformation (order,
// defaults spelled out, 0 px and 0%, 100% and the far edge, 32_18 and 16_9)
// and different for anything that can change a pixel on some image: a
// centered 50% crop and x_1=25%&x_2=75% differ by rounding, so they keep
// different keys. It leaves out the format and dl: the edge's cache key is
// the image id (lower case), the Format ParseFormat reads from the
// extension (".PNG" and no extension are png, ".JPEG" is jpg) and Key.
//
// # Cost
//
// A resize without a crop is the call vipsthumbnail makes (thumbnail from
// buffer): the PNG streams through the resize in a few MB whatever its
// height. A crop streams the same way (a scale-1 thumbnail load, pixel
// exact) unless it reaches far down a tall master, where libvips would hold
// every row above it; then the master is loaded with random access, which
// libvips keeps in memory up to 100 MB and in a temporary file beyond.
package transform
