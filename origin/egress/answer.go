package egress

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// AnswerHeader marks every response a session makes itself instead of
// relaying one: a refusal, an upstream failure, an error of the internal
// host, an answer while it closes. Its value is the session's random marker
// and the number of the Failure the response reports, which Answered looks
// up. A render checks its main document for it, so that the proxy's error
// page is never taken for the site's page.
//
// It cannot be forged into a relayed answer: the session drops the header
// from every plain-http response it relays, and a site reached through a
// CONNECT tunnel (which the session cannot edit) never learns the marker,
// which no relayed request carries.
const AnswerHeader = "X-Pictor-Egress"

// maxFailures caps the failures a session keeps; older ones are forgotten
// first, so the latest answers can always be looked up.
const maxFailures = 1000

// Failure is a request a session answered itself instead of relaying it.
type Failure struct {
	// Target is the host:port of a CONNECT or the request URI of an http
	// request.
	Target string
	// Host and Port are what the request asked for: the host as requested
	// (a name is never replaced by its addresses) and the port, default
	// included. Host is empty when the target could not be parsed.
	Host string
	Port uint16
	// Connect reports a CONNECT.
	Connect bool
	// Err says why. A refusal matches ErrBlockedAddress (an *AddressError),
	// ErrBlockedScheme or ErrInvalidHost; a failure matches ErrResolve,
	// ErrDial, ErrUpstream, ErrNotServed or ErrClosed, with the network
	// error below it. A failure of the session's upstream proxy is a
	// *ProxyError (ErrProxyBlocked, ErrProxyUnreachable, ErrProxyAuth or
	// ErrProxyFailed), which may match ErrDial, ErrBlockedAddress or a
	// network error too: look for it first. Err is nil for an answer whose
	// failure the session no longer keeps.
	Err error

	seq uint64
	key string // host and port as compared, "" when Host is
}

// Authority is Host and Port as one host:port, IPv6 in brackets; "" when
// Host is.
func (f Failure) Authority() string {
	if f.Host == "" {
		return ""
	}
	h := strings.TrimSuffix(strings.TrimPrefix(f.Host, "["), "]")
	if strings.IndexByte(h, ':') >= 0 {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(int(f.Port))
}

// newMarker returns a session's marker: 128 random bits.
func newMarker() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newFailure describes a request the session answers itself.
func newFailure(kind, target string, err error) Failure {
	f := Failure{Target: target, Connect: kind == kindConnect, Err: err}
	authority, defPort := target, uint16(0)
	if !f.Connect {
		u, perr := url.Parse(target)
		if perr != nil || u.Host == "" {
			return f
		}
		authority, defPort = u.Host, 80
	}
	hostname, port, perr := splitHostPort(authority, defPort)
	if perr != nil {
		return f
	}
	f.Host, f.Port = hostname, port
	f.key = hostKey(hostname, port)
	return f
}

// hostKey is how hosts are compared: parsed as the session parses them, so
// that spellings of one host (case, trailing dot, IDN, IPv4 forms) match.
func hostKey(hostname string, port uint16) string {
	h, err := parseHost(hostname)
	if err != nil {
		return ""
	}
	if h.addr.IsValid() {
		return h.addr.String() + "|" + strconv.Itoa(int(port))
	}
	return h.name + "|" + strconv.Itoa(int(port))
}

// answer records f and sends the session's own answer to a request:
// status and text, marked with AnswerHeader, never cached.
func (s *Session) answer(w http.ResponseWriter, status int, text string, f Failure) {
	h := w.Header()
	h.Set(AnswerHeader, s.record(f))
	h.Set("Cache-Control", "no-store")
	http.Error(w, text, status)
}

// record keeps f and returns the value of its AnswerHeader.
func (s *Session) record(f Failure) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.seq = s.failed
	s.failed++
	if len(s.failures) < maxFailures {
		s.failures = append(s.failures, f)
	} else {
		s.failures[f.seq%maxFailures] = f
	}
	return s.marker + "-" + strconv.FormatUint(f.seq, 10)
}

// Mark is how many failures the session has answered so far: Tunnel looks
// at those that come after a mark.
func (s *Session) Mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Answered reports whether a response carrying value in its AnswerHeader
// is an answer of this session, and the failure it reports (with a nil Err
// when the session no longer keeps it). Any other value, a site's attempt
// at one included, is not.
func (s *Session) Answered(value string) (Failure, bool) {
	marker, n, ok := strings.Cut(value, "-")
	if !ok || subtle.ConstantTimeCompare([]byte(marker), []byte(s.marker)) != 1 {
		return Failure{}, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return Failure{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq >= s.failed {
		return Failure{}, false
	}
	if f := s.failures[seq%maxFailures]; f.seq == seq {
		return f, true
	}
	return Failure{}, true
}

// Tunnel returns the latest CONNECT to host and port that the session
// answered itself after mark: Chromium shows a refused or failed tunnel
// only as ERR_TUNNEL_CONNECTION_FAILED, and this says why. host is read as
// the session reads a CONNECT's host.
func (s *Session) Tunnel(host string, port uint16, mark uint64) (Failure, bool) {
	key := hostKey(host, port)
	if key == "" {
		return Failure{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq := s.failed; seq > mark && s.failed-seq < uint64(len(s.failures)); seq-- {
		if f := s.failures[(seq-1)%maxFailures]; f.seq == seq-1 && f.Connect && f.key == key {
			return f, true
		}
	}
	return Failure{}, false
}

// ProxyFailure returns the first request after mark that the session's
// upstream proxy itself failed — its address refused, the proxy
// unreachable, or its credentials refused — whatever the request was for:
// a page whose images could not load through its proxy is not the page
// asked for. Failures of the proxy to reach a site (ErrProxyFailed) are
// the site's, and are not returned.
func (s *Session) ProxyFailure(mark uint64) (*ProxyError, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := mark
	if s.failed-start > uint64(len(s.failures)) {
		start = s.failed - uint64(len(s.failures))
	}
	for seq := start; seq < s.failed; seq++ {
		f := s.failures[seq%maxFailures]
		var pe *ProxyError
		if f.seq == seq && errors.As(f.Err, &pe) && pe.Kind != ErrProxyFailed {
			return pe, true
		}
	}
	return nil, false
}

// internalWriter marks the internal host's error answers as the session's
// own: a page that navigates to a document the internal host does not hold
// must not be captured showing its 404.
type internalWriter struct {
	http.ResponseWriter
	s      *Session
	target string
	wrote  bool
}

func (w *internalWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		h := w.Header()
		h.Del(AnswerHeader)
		if code >= 400 {
			h.Set(AnswerHeader, w.s.record(newFailure(kindHTTP, w.target, fmt.Errorf("%w: status %d", ErrNotServed, code))))
			h.Set("Cache-Control", "no-store")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *internalWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *internalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
