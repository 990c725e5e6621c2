package framing

import "errors"

// What a Checker refuses, each an RFC 9112 rule; the texts are public (the
// servers answer "Malformed HTTP request: <text>") and quote no byte of the
// request.
var (
	// §3: method SP request-target SP HTTP-version CRLF, single spaces.
	ErrRequestLine = errors.New("a malformed request line")
	// §2.3: the servers speak HTTP/1.0 and HTTP/1.1 only.
	ErrVersion = errors.New("an HTTP version other than 1.0 or 1.1")
	// §2.2: a recipient may take a lone LF for CRLF; net/http and fasthttp
	// do, a proxy may not.
	ErrLineEnding = errors.New("a header line not ended by CRLF")
	// §2.2: a bare CR must be refused or read as a space.
	ErrBareCR = errors.New("a CR not followed by LF")
	// §5.2: obs-fold must be refused or replaced with spaces; also a line
	// of whitespace between the request line and the first field (§2.2).
	ErrFold = errors.New("a header line folded onto the next (obs-fold)")
	// RFC 9110 §5.1: a field name is a token; §5.1 of RFC 9112 also refuses
	// whitespace between the name and the colon.
	ErrFieldName = errors.New("a header name that is not a token")
	// §5: a field line is a name, a colon and a value.
	ErrNoColon = errors.New("a header line without a colon")
	// RFC 9110 §5.5: no control character but HTAB in a field value.
	ErrFieldValue = errors.New("a control character in a header value")
	// §6.3: a server may refuse a message with both, and must close the
	// connection after it.
	ErrBothLengths = errors.New("Transfer-Encoding and Content-Length together")
	// §6.1: chunked is the only transfer coding the servers read.
	ErrNotChunked = errors.New("a Transfer-Encoding other than chunked")
	// §6.1: Transfer-Encoding in HTTP/1.0 means faulty framing.
	ErrChunkedHTTP10 = errors.New("Transfer-Encoding in HTTP/1.0")
	// §6.1: one Transfer-Encoding field, naming chunked once.
	ErrRepeatedTransferEncoding = errors.New("Transfer-Encoding repeated")
	// §6.3: a Content-Length is 1*DIGIT, within 63 bits.
	ErrContentLength = errors.New("a malformed Content-Length")
	// §6.3: repeated Content-Length, even with one value, is refused.
	ErrRepeatedContentLength = errors.New("Content-Length repeated")
	// §7.1: chunk-size is 1*HEXDIG, within 63 bits.
	ErrChunkSize = errors.New("a malformed chunk size")
	// §7.1.1: whitespace (BWS) in a chunk line; see Checker.
	ErrChunkSpace = errors.New("whitespace in a chunk line")
	// §7.1.1: chunk-ext = *( ";" token [ "=" ( token / quoted-string ) ] ).
	ErrChunkExtension = errors.New("a malformed chunk extension")
	// §7.1: a chunk line ends with CRLF, and only there.
	ErrChunkLine = errors.New("a chunk line not ended by CRLF")
	// §7.1: chunk-data CRLF.
	ErrChunkData = errors.New("chunk data not ended by CRLF")
	// §7.1.2: a trailer field that frames the message is refused.
	ErrTrailerField = errors.New("a framing field in the trailer")
)
