// Package compress is the edge's content coding of text answers: which
// coding a client accepts (Negotiate, from Accept-Encoding), which answers
// are worth compressing (Compressible, MinSize), the ETag of a compressed
// variant (ETag), and a streaming compressor for relayed bodies (Reader).
//
// Brotli (github.com/andybalholm/brotli) is preferred to gzip
// (github.com/klauspost/compress) at equal q. Files the edge serves from the
// binary are compressed at build time (origin/contract/precompress); only
// relayed answers are compressed on the fly, in bounded memory.
package compress
