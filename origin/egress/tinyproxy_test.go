package egress

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/egress/tinyproxytest"
)

// The credentials the test tinyproxy accepts.
const (
	proxyUser = tinyproxytest.User
	proxyPass = tinyproxytest.Password
	proxyVia  = tinyproxytest.Via
	proxyOut  = tinyproxytest.Out
)

// secrets are what must never appear in a log, an error or an answer:
// the passwords the tests use and every Proxy-Authorization made of them.
func secrets(passwords ...string) []string {
	var out []string
	for _, p := range passwords {
		out = append(out, p, base64.StdEncoding.EncodeToString([]byte(proxyUser+":"+p)))
	}
	return out
}

func checkNoSecrets(t *testing.T, what, text string, passwords ...string) {
	t.Helper()
	for _, s := range secrets(passwords...) {
		if strings.Contains(text, s) {
			t.Fatalf("%s holds a credential (%q): %s", what, s, text)
		}
	}
}

// tinyproxy is the shared test tinyproxy (package tinyproxytest).
type tinyproxy struct {
	*tinyproxytest.Proxy
	addr string
	port int
}

func startTinyproxy(t *testing.T) *tinyproxy {
	p := tinyproxytest.Start(t)
	return &tinyproxy{Proxy: p, addr: p.Addr, port: p.Port}
}

func (tp *tinyproxy) log(t *testing.T) string        { return tp.Log(t) }
func (tp *tinyproxy) requests(t *testing.T) []string { return tp.Requests(t) }

func freePort(t *testing.T) int { return tinyproxytest.FreePort(t) }

// hit is one request a target received.
type hit struct {
	Path      string
	Host      string
	Remote    string // the IP the request came from
	Via       string
	ProxyAuth string
}

// target is a real site on 127.0.0.1 that records who reached it.
type target struct {
	srv *httptest.Server
	mu  sync.Mutex
	all []hit
}

func newTarget(t *testing.T, useTLS bool) *target {
	t.Helper()
	tg := &target{}
	tg.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote, _, _ := net.SplitHostPort(r.RemoteAddr)
		h := hit{Path: r.URL.Path, Host: r.Host, Remote: remote, Via: r.Header.Get("Via"), ProxyAuth: r.Header.Get("Proxy-Authorization")}
		tg.mu.Lock()
		tg.all = append(tg.all, h)
		tg.mu.Unlock()
		if r.URL.Path == "/unauthorized" {
			w.Header().Set("WWW-Authenticate", `Basic realm="site"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
		_ = json.NewEncoder(w).Encode(h)
	}))
	if useTLS {
		tg.srv.StartTLS()
	} else {
		tg.srv.Start()
	}
	t.Cleanup(tg.srv.Close)
	return tg
}

// port is the target's port.
func (tg *target) port() string {
	return strconv.Itoa(tg.srv.Listener.Addr().(*net.TCPAddr).Port)
}

// hits returns what the target received at path.
func (tg *target) hits(path string) []hit {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var out []hit
	for _, h := range tg.all {
		if h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

// newLoggedGateway returns a gateway whose log, at Debug, is kept.
func newLoggedGateway(t *testing.T, res Resolver, mutate func(*Config)) (*Gateway, *apitest.Buffer) {
	t.Helper()
	logs := &apitest.Buffer{}
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if res != nil { // nil: the system's resolver, DefaultConfig's
		cfg.Resolver = res
	}
	cfg.Registerer = prometheus.NewRegistry()
	if mutate != nil {
		mutate(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, logs
}

// tinyUpstream is an Upstream for tp with the given password.
func tinyUpstream(tp *tinyproxy, password string, bypass ...string) *Upstream {
	return &Upstream{Host: "127.0.0.1", Port: tp.port, Scheme: "http", Username: proxyUser, Password: password, Bypass: bypass}
}
