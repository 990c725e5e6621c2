package framing

import (
	"bytes"
	"encoding/binary"
)

// Checker follows a stream of HTTP/1.1 requests byte by byte and finds the
// first byte at which the stream stops being well-framed requests. Its
// zero value is ready for a connection's first byte; it allocates nothing
// and keeps no byte, so it checks a stream fed in reads of any size, one
// byte at a time included, with the same verdict.
//
// It accepts, per RFC 9112 and nothing looser:
//   - empty lines (CRLF) before a request line (§2.2);
//   - the request line: a token, one space, a target of visible ASCII or
//     obs-text, one space, HTTP/1.0 or HTTP/1.1, CRLF;
//   - field lines: a token, a colon, a value of HTAB, visible ASCII,
//     spaces or obs-text, CRLF; no obs-fold;
//   - the body's length from one Content-Length (digits within optional
//     whitespace), or from one Transfer-Encoding naming chunked alone in
//     HTTP/1.1 without Content-Length; no body otherwise;
//   - chunks: 1*HEXDIG, chunk extensions ";" token ["=" (token or
//     quoted-string)], CRLF, the data, CRLF; the last chunk, trailer field
//     lines (not Content-Length nor Transfer-Encoding), CRLF.
//
// Whitespace in a chunk line is refused, though the chunk-ext grammar
// allows it (BWS) around ";" and "=": senders must not generate BWS, so no
// conforming client is refused, while parsers disagree on it (fasthttp
// refuses a space before ";", net/http trims any), and a framing element
// parsers read differently is what request smuggling is made of. A trailing
// space after the size, with no extension, is not in the grammar at all.
//
// What it does not check cannot change where a request ends, and the
// servers check it: the method's meaning, the target's syntax, Host, the
// header block's size, what the values of other fields say.
type Checker struct {
	state   state
	sub     uint8 // progress within the literal or field value being read
	nameLen uint8 // bytes of the field name read, while it may be a framing field
	cand    uint8 // the framing fields the name being read may still be
	field   uint8 // the framing field whose value is being read, if any
	head    uint8 // what the current head declared (has*)
	n       int64 // Content-Length or chunk size being read; then bytes of it left
	done    int64 // requests whose framing ended
	pos     int64 // bytes passed
	start   int64 // where the request under way began
	err     error
}

type state uint8

const (
	sStart       state = iota // before a request line (or an empty line)
	sStartLF                  // an empty line's CR read
	sMethod                   // in the method
	sTarget0                  // the target's first byte
	sTarget                   // in the target
	sVersion                  // in the HTTP version, sub bytes matched
	sVersionCR                // after the version
	sLineLF                   // a start line's CR read
	sField0                   // at the start of a field line or the blank line
	sName                     // in a field name
	sValue                    // in a field value
	sValueLF                  // a field line's CR read
	sHeadLF                   // the blank line's CR read
	sBody                     // in a Content-Length body, n bytes left
	sSize0                    // a chunk size's first digit
	sSize                     // in a chunk size
	sExtName0                 // after ";": an extension name's first byte
	sExtName                  // in an extension name
	sExtValue0                // after "=": a value's first byte
	sExtToken                 // in a token value
	sExtQuoted                // in a quoted-string value
	sExtPair                  // after a backslash in a quoted string
	sExtQuoteEnd              // after the closing quote
	sSizeLF                   // a chunk line's CR read
	sData                     // in chunk data, n bytes left
	sDataCR                   // after chunk data
	sDataLF                   // chunk data's CR read
)

// The framing fields, as cand bits and field values.
const (
	fieldContentLength    = 1
	fieldTransferEncoding = 2
)

// What a head declared, as head bits.
const (
	hasContentLength    = 1 << iota
	hasTransferEncoding // naming chunked
	isHTTP10
	inTrailer // the field lines being read are a trailer's
)

const (
	nameContentLength    = "content-length"
	nameTransferEncoding = "transfer-encoding"
	chunked              = "chunked"
	versionPrefix        = "HTTP/1."
	maxLength            = 1<<63 - 1
)

// Check reads p, the stream's next bytes, and returns how many of them
// lie before the first byte that breaks the framing: n == len(p) and a nil
// error when all of p is well-framed so far; otherwise p[n] is that byte
// and the error says why. Once it has returned an error it returns it
// again for every later call, taking no byte.
func (c *Checker) Check(p []byte) (n int, err error) {
	n, err = c.check(p)
	c.pos += int64(n)
	return n, err
}

func (c *Checker) check(p []byte) (n int, err error) {
	if c.err != nil {
		return 0, c.err
	}
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch c.state {
		case sStart:
			switch {
			case b == '\r':
				c.state = sStartLF
			case tchar[b]:
				c.state = sMethod
			case b == '\n':
				return c.fail(i, ErrLineEnding)
			default:
				return c.fail(i, ErrRequestLine)
			}
		case sStartLF:
			if b != '\n' {
				return c.fail(i, ErrBareCR)
			}
			c.state = sStart
		case sMethod:
			for tchar[b] {
				if i++; i == len(p) {
					return len(p), nil
				}
				b = p[i]
			}
			if b != ' ' {
				return c.fail(i, lineError(b, ErrRequestLine))
			}
			c.state = sTarget0
		case sTarget0:
			if !target[b] {
				return c.fail(i, lineError(b, ErrRequestLine))
			}
			c.state = sTarget
		case sTarget:
			rest := p[i:]
			end := bytes.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			if k := firstInvalid(rest[:end], &target); k >= 0 {
				return c.fail(i+k, lineError(rest[k], ErrRequestLine))
			}
			if end == len(rest) {
				return len(p), nil
			}
			i += end
			c.state, c.sub = sVersion, 0
		case sVersion:
			if c.sub == 0 && len(p)-i > len(versionPrefix) && string(p[i:i+len(versionPrefix)]) == versionPrefix {
				i += len(versionPrefix)
				b, c.sub = p[i], uint8(len(versionPrefix))
			}
			if int(c.sub) < len(versionPrefix) {
				if b != versionPrefix[c.sub] {
					if int(c.sub) < len("HTTP/") {
						return c.fail(i, lineError(b, ErrRequestLine))
					}
					return c.fail(i, lineError(b, ErrVersion))
				}
				c.sub++
				continue
			}
			switch b {
			case '0':
				c.head |= isHTTP10
			case '1':
			default:
				return c.fail(i, lineError(b, ErrVersion))
			}
			c.state = sVersionCR
		case sVersionCR:
			if b != '\r' {
				return c.fail(i, lineError(b, ErrVersion))
			}
			c.state = sLineLF
		case sLineLF:
			if b != '\n' {
				return c.fail(i, ErrBareCR)
			}
			c.state = sField0
		case sField0:
			switch {
			case b == '\r':
				c.state = sHeadLF
			case tchar[b]:
				// Only a name's first letter decides whether it may be a
				// framing field: most are not, and are then only scanned.
				c.state, c.nameLen, c.cand = sName, 0, 0
				switch b | 0x20 {
				case 'c':
					c.cand = fieldContentLength
				case 't':
					c.cand = fieldTransferEncoding
				}
				i-- // the name's first byte is read in sName
			case b == ' ' || b == '\t':
				return c.fail(i, ErrFold)
			case b == '\n':
				return c.fail(i, ErrLineEnding)
			default:
				return c.fail(i, ErrFieldName)
			}
		case sName:
			rest := p[i:]
			end := firstNonToken(rest)
			if c.cand != 0 {
				if c.nameLen == 0 && end < len(rest) {
					c.wholeName(rest[:end])
				} else {
					c.name(rest[:end])
				}
			}
			if end == len(rest) {
				return len(p), nil
			}
			i += end
			b = p[i]
			switch b {
			case ':':
			case '\r':
				return c.fail(i, ErrNoColon)
			default:
				return c.fail(i, lineError(b, ErrFieldName))
			}
			if err := c.nameEnd(); err != nil {
				return c.fail(i, err)
			}
			c.state = sValue
		case sValue:
			if c.field == 0 {
				rest := p[i:]
				end := bytes.IndexByte(rest, '\r')
				if end < 0 {
					end = len(rest)
				}
				if k := firstInvalid(rest[:end], &value); k >= 0 {
					return c.fail(i+k, lineError(rest[k], ErrFieldValue))
				}
				if end == len(rest) {
					return len(p), nil
				}
				i += end
				b = '\r'
			} else if value[b] {
				if err := c.fieldByte(b); err != nil {
					return c.fail(i, err)
				}
				continue
			}
			if b != '\r' {
				return c.fail(i, lineError(b, ErrFieldValue))
			}
			if err := c.valueEnd(); err != nil {
				return c.fail(i, err)
			}
			c.state = sValueLF
		case sValueLF:
			if b != '\n' {
				return c.fail(i, ErrBareCR)
			}
			c.state = sField0
		case sHeadLF:
			if b != '\n' {
				return c.fail(i, ErrBareCR)
			}
			if err := c.headEnd(i); err != nil {
				return c.fail(i, err)
			}
		case sBody:
			k := int64(len(p) - i)
			if k >= c.n {
				i += int(c.n) - 1
				c.end(i)
				continue
			}
			c.n -= k
			return len(p), nil
		case sSize0:
			d := unhex[b]
			if d > 15 {
				return c.fail(i, chunkLineError(b, ErrChunkSize))
			}
			c.n = int64(d)
			c.state = sSize
		case sSize:
			switch d := unhex[b]; {
			case d <= 15:
				if c.n > maxLength>>4 {
					return c.fail(i, ErrChunkSize)
				}
				c.n = c.n<<4 | int64(d)
			case b == ';':
				c.state = sExtName0
			case b == '\r':
				c.state = sSizeLF
			default:
				return c.fail(i, chunkLineError(b, ErrChunkSize))
			}
		case sExtName0:
			if !tchar[b] {
				return c.fail(i, chunkLineError(b, ErrChunkExtension))
			}
			c.state = sExtName
		case sExtName:
			switch {
			case tchar[b]:
			case b == '=':
				c.state = sExtValue0
			case b == ';':
				c.state = sExtName0
			case b == '\r':
				c.state = sSizeLF
			default:
				return c.fail(i, chunkLineError(b, ErrChunkExtension))
			}
		case sExtValue0:
			switch {
			case tchar[b]:
				c.state = sExtToken
			case b == '"':
				c.state = sExtQuoted
			default:
				return c.fail(i, chunkLineError(b, ErrChunkExtension))
			}
		case sExtToken:
			switch {
			case tchar[b]:
			case b == ';':
				c.state = sExtName0
			case b == '\r':
				c.state = sSizeLF
			default:
				return c.fail(i, chunkLineError(b, ErrChunkExtension))
			}
		case sExtQuoted:
			switch {
			case b == '"':
				c.state = sExtQuoteEnd
			case b == '\\':
				c.state = sExtPair
			case qdtext[b]:
			default:
				return c.fail(i, chunkLineError(b, ErrChunkExtension))
			}
		case sExtPair:
			if !value[b] {
				return c.fail(i, chunkLineError(b, ErrChunkExtension))
			}
			c.state = sExtQuoted
		case sExtQuoteEnd:
			switch b {
			case ';':
				c.state = sExtName0
			case '\r':
				c.state = sSizeLF
			default:
				return c.fail(i, chunkLineError(b, ErrChunkExtension))
			}
		case sSizeLF:
			if b != '\n' {
				return c.fail(i, ErrChunkLine)
			}
			if c.n == 0 {
				c.state = sField0
				c.head |= inTrailer
			} else {
				c.state = sData
			}
		case sData:
			k := int64(len(p) - i)
			if k >= c.n {
				i += int(c.n) - 1
				c.state = sDataCR
				continue
			}
			c.n -= k
			return len(p), nil
		case sDataCR:
			if b != '\r' {
				return c.fail(i, ErrChunkData)
			}
			c.state = sDataLF
		case sDataLF:
			if b != '\n' {
				return c.fail(i, ErrChunkData)
			}
			c.state = sSize0
		}
	}
	return len(p), nil
}

// Requests returns how many requests the stream held whose framing ended
// well: the request under way, or the one an error was found in, is
// number Requests()+1.
func (c *Checker) Requests() int64 { return c.done }

// Offset returns how many bytes of the request under way it passed (the
// empty lines before it included); once it refused a byte, how many of
// that byte's request came before it.
func (c *Checker) Offset() int64 { return c.pos - c.start }

// Begun reports whether the checker has read a byte of a request, empty
// lines before it aside, since the last request ended; once it refused a
// byte, whether that byte came after the start of its request.
func (c *Checker) Begun() bool { return c.state != sStart && c.state != sStartLF }

// Err returns the error Check returned, if any.
func (c *Checker) Err() error { return c.err }

func (c *Checker) fail(i int, err error) (int, error) {
	c.err = err
	return i, err
}

// end ends a request at p[i] of the bytes being checked.
func (c *Checker) end(i int) {
	c.done++
	c.start = c.pos + int64(i) + 1
	c.state, c.head, c.n = sStart, 0, 0
}

// name reads bytes of a field name (tokens), narrowing the framing fields
// it may be.
func (c *Checker) name(s []byte) {
	k := int(c.nameLen)
	if k+len(s) > len(nameTransferEncoding) {
		c.cand = 0
		return
	}
	for j, b := range s {
		// Lower case: both names hold only letters and '-', whose only
		// other preimage is CR, not a token.
		b |= 0x20
		if k+j >= len(nameContentLength) || b != nameContentLength[k+j] {
			c.cand &^= fieldContentLength
		}
		if b != nameTransferEncoding[k+j] {
			c.cand &^= fieldTransferEncoding
		}
	}
	c.nameLen += uint8(len(s))
}

// wholeName reads a field name read whole at once.
func (c *Checker) wholeName(s []byte) {
	switch {
	case len(s) == len(nameContentLength) && equalLower(s, nameContentLength):
		c.cand &= fieldContentLength
	case len(s) == len(nameTransferEncoding) && equalLower(s, nameTransferEncoding):
		c.cand &= fieldTransferEncoding
	default:
		c.cand = 0
	}
	c.nameLen = uint8(min(len(s), len(nameTransferEncoding)+1))
}

// equalLower reports whether s is lower, ignoring the case of ASCII
// letters; lower holds only lower-case letters and '-'.
func equalLower(s []byte, lower string) bool {
	for i, b := range s {
		if b|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// nameEnd starts a field's value once its name is read.
func (c *Checker) nameEnd() error {
	c.field, c.sub = 0, 0
	switch {
	case c.cand&fieldContentLength != 0 && int(c.nameLen) == len(nameContentLength):
		c.field = fieldContentLength
	case c.cand&fieldTransferEncoding != 0 && int(c.nameLen) == len(nameTransferEncoding):
		c.field = fieldTransferEncoding
	default:
		return nil
	}
	switch {
	case c.head&inTrailer != 0:
		return ErrTrailerField
	case c.field == fieldContentLength && c.head&hasContentLength != 0:
		return ErrRepeatedContentLength
	case c.field == fieldTransferEncoding && c.head&hasTransferEncoding != 0:
		return ErrRepeatedTransferEncoding
	}
	return nil
}

// Progress through a framing field's value, in sub.
const (
	clBefore = iota // whitespace before the digits
	clDigits
	clAfter // whitespace after them
)

// teAfter: in Transfer-Encoding's value, sub counts the letters of
// "chunked" matched; teAfter is the whitespace after them.
const teAfter = uint8(len(chunked) + 1)

// fieldByte reads a byte of a framing field's value (a valid value byte).
func (c *Checker) fieldByte(b byte) error {
	ows := b == ' ' || b == '\t'
	if c.field == fieldContentLength {
		switch {
		case ows:
			if c.sub == clDigits {
				c.sub = clAfter
			}
		case b >= '0' && b <= '9' && c.sub != clAfter:
			if c.sub == clBefore {
				c.sub, c.n = clDigits, 0
			}
			if c.n > (maxLength-int64(b-'0'))/10 {
				return ErrContentLength
			}
			c.n = c.n*10 + int64(b-'0')
		default:
			return ErrContentLength
		}
		return nil
	}
	switch k := int(c.sub); {
	case ows && (k == 0 || k >= len(chunked)):
		if k == len(chunked) {
			c.sub = teAfter
		}
	case k < len(chunked) && b|0x20 == chunked[k]:
		c.sub++
	default:
		return ErrNotChunked
	}
	return nil
}

// valueEnd ends a field's value at its CR.
func (c *Checker) valueEnd() error {
	switch c.field {
	case fieldContentLength:
		if c.sub == clBefore {
			return ErrContentLength
		}
		c.head |= hasContentLength
	case fieldTransferEncoding:
		if int(c.sub) < len(chunked) {
			return ErrNotChunked
		}
		c.head |= hasTransferEncoding
	}
	c.field = 0
	return nil
}

// headEnd decides, at the blank line's LF (p[i]), where the body ends.
func (c *Checker) headEnd(i int) error {
	h := c.head
	switch {
	case h&inTrailer != 0:
		c.end(i)
	case h&hasTransferEncoding != 0 && h&hasContentLength != 0:
		return ErrBothLengths
	case h&hasTransferEncoding != 0 && h&isHTTP10 != 0:
		return ErrChunkedHTTP10
	case h&hasTransferEncoding != 0:
		c.state, c.n = sSize0, 0
	case h&hasContentLength != 0 && c.n > 0:
		c.state = sBody
	default:
		c.end(i)
	}
	return nil
}

// lineError is the error for b where a head line held an unexpected byte:
// a lone LF is a line-ending problem, anything else is def.
func lineError(b byte, def error) error {
	if b == '\n' {
		return ErrLineEnding
	}
	return def
}

// chunkLineError is the error for b where a chunk line held an unexpected
// byte.
func chunkLineError(b byte, def error) error {
	switch b {
	case ' ', '\t':
		return ErrChunkSpace
	case '\n':
		return ErrChunkLine
	}
	return def
}

var (
	tchar  [256]bool // RFC 9110 §5.6.2 token characters
	value  [256]bool // field-vchar and whitespace: HTAB, SP, VCHAR, obs-text
	target [256]bool // VCHAR and obs-text
	qdtext [256]bool // RFC 9110 §5.6.4
	unhex  [256]uint8
)

func init() {
	for b := range 256 {
		c := byte(b)
		tchar[b] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c != 0 && indexByte("!#$%&'*+-.^_`|~", c)
		target[b] = c > 0x20 && c != 0x7f
		value[b] = target[b] || c == ' ' || c == '\t'
		qdtext[b] = value[b] && c != '"' && c != '\\'
		switch {
		case c >= '0' && c <= '9':
			unhex[b] = c - '0'
		case c >= 'a' && c <= 'f':
			unhex[b] = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			unhex[b] = c - 'A' + 10
		default:
			unhex[b] = 0xff
		}
	}
}

// firstInvalid returns the index of the first byte of s that ok does not
// hold, or -1. It reads eight bytes at a time while none of them is a
// control character or DEL (which ok never holds but for HTAB).
func firstInvalid(s []byte, ok *[256]bool) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		del := x ^ (ones * 0x7f)
		// Any byte below 0x20, or equal to 0x7f (a zero in del).
		if (x-ones*0x20)&^x&highs == 0 && (del-ones)&^del&highs == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			if !ok[s[j]] {
				return j
			}
		}
	}
	for ; i < len(s); i++ {
		if !ok[s[i]] {
			return i
		}
	}
	return -1
}

// firstNonToken returns the index of the first byte of s that is not a
// token character, or len(s).
func firstNonToken(s []byte) int {
	for i, b := range s {
		if !tchar[b] {
			return i
		}
	}
	return len(s)
}

func indexByte(s string, c byte) bool {
	for i := range len(s) {
		if s[i] == c {
			return true
		}
	}
	return false
}
