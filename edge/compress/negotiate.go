package compress

import "bytes"

// Encoding is a content coding the edge may answer with.
type Encoding uint8

const (
	Identity Encoding = iota // no coding
	Gzip
	Brotli
)

var tokens = [...]string{Identity: "identity", Gzip: "gzip", Brotli: "br"}

// String returns the coding's name as Content-Encoding states it.
func (e Encoding) String() string { return tokens[e] }

// qvalues are thousandths: 0 refuses, 1000 is q=1; unset marks a coding the
// header does not name.
const (
	qMax   = 1000
	qUnset = -1
)

// Negotiate returns the coding to answer with, given the request's
// Accept-Encoding (RFC 9110 §12.5.3): the accepted coding of highest q
// among br and gzip (x-gzip is gzip), Brotli at equal q; Identity when the
// header is absent or empty, refuses both (q=0, or unnamed with no "*"), or
// prefers identity by a higher q. Names are case-insensitive and whitespace
// around elements and parameters is ignored. An element whose q is not a
// valid qvalue ("0", "0.5", "1.000", not "0.5000" or "2") is ignored as a
// whole. When a name comes twice, its highest q counts. When the client
// refuses identity too (identity;q=0, or *;q=0), the edge still answers
// with identity rather than 406: RFC 9110 allows it, and an answer is more
// use than an error. It allocates nothing.
func Negotiate(header []byte) Encoding {
	qBr, qGzip, qID, qAny := qUnset, qUnset, qUnset, qUnset
	for len(header) > 0 {
		var elem []byte
		elem, header, _ = bytes.Cut(header, []byte{','})
		name, params, _ := bytes.Cut(elem, []byte{';'})
		name = trimOWS(name)
		if len(name) == 0 {
			continue
		}
		q, ok := parseParams(params)
		if !ok {
			continue
		}
		switch {
		case equalFold(name, "br"):
			qBr = max(qBr, q)
		case equalFold(name, "gzip"), equalFold(name, "x-gzip"):
			qGzip = max(qGzip, q)
		case equalFold(name, "identity"):
			qID = max(qID, q)
		case len(name) == 1 && name[0] == '*':
			qAny = max(qAny, q)
		}
	}
	if qBr == qUnset {
		qBr = max(qAny, 0)
	}
	if qGzip == qUnset {
		qGzip = max(qAny, 0)
	}
	// identity, when unnamed, is acceptable but preferred to no coding the
	// client names; "*" covers it like any coding.
	if qID == qUnset {
		qID = max(qAny, 0)
	}
	best, q := Brotli, qBr
	if qGzip > q {
		best, q = Gzip, qGzip
	}
	if q == 0 || q < qID {
		return Identity
	}
	return best
}

// parseParams reads an element's parameters (after its first ';') and
// returns its q, qMax when it has none; ok is false when a q is malformed.
func parseParams(params []byte) (q int, ok bool) {
	q = qMax
	for len(params) > 0 {
		var p []byte
		p, params, _ = bytes.Cut(params, []byte{';'})
		name, value, found := bytes.Cut(p, []byte{'='})
		if !found || !equalFold(trimOWS(name), "q") {
			continue // another parameter: no coding the edge uses has any
		}
		if q, ok = parseQ(trimOWS(value)); !ok {
			return 0, false
		}
	}
	return q, true
}

// parseQ parses a qvalue: "0" [ "." 0*3DIGIT ] / "1" [ "." 0*3("0") ].
func parseQ(v []byte) (int, bool) {
	if len(v) == 0 || (v[0] != '0' && v[0] != '1') {
		return 0, false
	}
	q := int(v[0]-'0') * qMax
	if len(v) == 1 {
		return q, true
	}
	if v[1] != '.' || len(v) > 5 {
		return 0, false
	}
	scale := 100
	for _, c := range v[2:] {
		if c < '0' || c > '9' || (q == qMax && c != '0') {
			return 0, false
		}
		q += int(c-'0') * scale
		scale /= 10
	}
	return q, true
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold reports whether b is lower, ignoring ASCII case; lower is in
// lower case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
