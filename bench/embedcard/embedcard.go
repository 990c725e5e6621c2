package embedcard

import (
	"errors"
	"fmt"
	"html"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/pictorhq/pictor/bench/card"
)

// Hosts are the loopback addresses of the embed card's sites: the
// card on the first, one embedded post on each of the others. To Chromium
// a site is a scheme and a host (an IP address is its own site; the port
// does not count), so under site isolation each post gets a renderer
// process of its own. Linux routes all of 127.0.0.0/8 to the loopback
// interface, so the harness can listen on each without setup.
var Hosts = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}

// Geometry of an embedded post on the embed card.
const (
	embedWidth  = 336
	embedHeight = 300
)

// HTML returns a 1200×630 social card as a whole document, like
// card.HTML's but with a row of iframes, one per URL of embeds, as a blog
// post embeds social posts. Every n and nonce give a different card.
func HTML(n int, nonce string, embeds []string) string {
	h1, h2 := (n*37)%360, (n*37+140)%360
	var frames string
	for _, u := range embeds {
		frames += fmt.Sprintf(`<iframe src="%s" width="%d" height="%d" scrolling="no" title="post"></iframe>`+"\n",
			html.EscapeString(u), embedWidth, embedHeight)
	}
	return fmt.Sprintf(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Embed card %[3]d</title><style>
html,body{margin:0;padding:0;overflow:hidden}
.card{box-sizing:border-box;width:%[5]dpx;height:%[6]dpx;padding:44px 64px;display:flex;flex-direction:column;justify-content:space-between;
background:linear-gradient(135deg,hsl(%[1]d,70%%,35%%) 0%%,hsl(%[2]d,75%%,50%%) 100%%);color:#fff;font-family:"DejaVu Sans","Liberation Sans",sans-serif}
.kicker{font-size:24px;letter-spacing:4px;text-transform:uppercase;opacity:.8}
h1{margin:0;font-size:44px;line-height:1.1;font-weight:800;text-shadow:0 4px 18px rgba(0,0,0,.35)}
.embeds{display:flex;justify-content:space-between}
iframe{border:0;border-radius:16px;background:#fff;box-shadow:0 6px 24px rgba(0,0,0,.25)}
.foot{display:flex;justify-content:space-between;font-size:22px;opacity:.9}
</style></head><body><div class="card">
<div class="kicker">Pictor benchmark · embeds</div>
<h1>Social card number %[3]d with posts embedded from other sites</h1>
<div class="embeds">
%[7]s</div>
<div class="foot"><span>pictor.example</span><span>%[4]s</span></div>
</div></body></html>
`, h1, h2, n, html.EscapeString(nonce), card.Width, card.Height, frames)
}

// PostHTML returns post k of embed card n: what a social network's
// embed shows (avatar, author, text, counters), with a script that fills
// in the counters and the date, as embeds do once their script runs.
func PostHTML(n, k int, nonce string) string {
	hue := (n*37 + k*97) % 360
	return fmt.Sprintf(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>
html,body{margin:0;height:100%%;overflow:hidden;background:#fff}
.post{box-sizing:border-box;height:100%%;padding:18px 20px;display:flex;flex-direction:column;gap:12px;color:#0f1419;
font-family:"DejaVu Sans","Liberation Sans",sans-serif}
.who{display:flex;align-items:center;gap:12px}
.avatar{width:48px;height:48px;flex:none}
.name{font-weight:700;font-size:17px}.handle,.meta{color:#536471;font-size:14px}
.text{font-size:16px;line-height:1.4}
.meta{margin-top:auto;display:flex;justify-content:space-between;border-top:1px solid #eff3f4;padding-top:10px}
</style></head><body><div class="post">
<div class="who"><svg class="avatar" viewBox="0 0 48 48"><circle cx="24" cy="24" r="24" fill="hsl(%[1]d,60%%,45%%)"/>
<circle cx="24" cy="19" r="8" fill="#fff"/><path d="M9 40a15 13 0 0 1 30 0z" fill="#fff"/></svg>
<div><div class="name">Author %[3]d</div><div class="handle">@author%[3]d · <span id="when"></span></div></div></div>
<div class="text">Post %[3]d on card %[2]d: a few lines of text the way a social embed shows them, with a link to pictor.example and a tag. %[4]s</div>
<div class="meta"><span id="replies"></span><span id="reposts"></span><span id="likes"></span></div>
</div><script>
const n = %[2]d, k = %[3]d;
const count = (m) => ((n * 7919 + k * 104729) %% m).toLocaleString("en-US");
document.getElementById("replies").textContent = count(97) + " replies";
document.getElementById("reposts").textContent = count(997) + " reposts";
document.getElementById("likes").textContent = count(99991) + " likes";
document.getElementById("when").textContent = new Date(Date.UTC(2026, 0, 1) + n * 3600e3).toISOString().slice(0, 10);
</script></body></html>
`, hue, n, k, html.EscapeString(nonce))
}

// Sites serve the embed card and its posts on one port of every address
// of Hosts, and count what it served per tag (the
// configuration whose Chromium asked).
type Sites struct {
	hosts []string
	port  int
	srv   *http.Server
	done  chan error

	mu     sync.Mutex
	served Counts
}

// Counts is what the sites served per tag.
type Counts map[string][2]int // tag → card pages, posts

// Sub returns c less an earlier count.
func (c Counts) Sub(o Counts) Counts {
	out := Counts{}
	for tag, v := range c {
		out[tag] = [2]int{v[0] - o[tag][0], v[1] - o[tag][1]}
	}
	return out
}

// Note says how many posts Chromium loaded per card of tag: every card
// has len(Hosts)-1, and fewer means iframes stayed empty.
func (c Counts) Note(tag string) string {
	v := c[tag]
	if v[0] == 0 {
		return "the embed sites served no card page"
	}
	return fmt.Sprintf("the embed sites served %d card pages and %d posts (%.2f per card, %d expected)",
		v[0], v[1], float64(v[1])/float64(v[0]), len(Hosts)-1)
}

// Start listens on one port of every host (a port free on all of them,
// found by trying) and serves the embed card. Stop it with Close.
func Start(hosts []string) (*Sites, error) {
	var lns []net.Listener
	var err error
	for range 20 {
		lns, err = listenAll(hosts)
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	s := &Sites{hosts: hosts, port: lns[0].Addr().(*net.TCPAddr).Port, done: make(chan error, len(lns)),
		served: Counts{}}
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	for _, ln := range lns {
		go func() { s.done <- s.srv.Serve(ln) }()
	}
	return s, nil
}

// listenAll listens on a free port of hosts[0], then on the same port of
// the other hosts.
func listenAll(hosts []string) ([]net.Listener, error) {
	first, err := net.Listen("tcp", net.JoinHostPort(hosts[0], "0"))
	if err != nil {
		return nil, err
	}
	lns := []net.Listener{first}
	port := strconv.Itoa(first.Addr().(*net.TCPAddr).Port)
	for _, h := range hosts[1:] {
		ln, err := net.Listen("tcp", net.JoinHostPort(h, port))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// base returns the origin of site i.
func (s *Sites) base(i int) string {
	return "http://" + net.JoinHostPort(s.hosts[i], strconv.Itoa(s.port))
}

// CardURL returns the address of embed card n for tag.
func (s *Sites) CardURL(tag string, n int, nonce string) string {
	return s.base(0) + "/card?" + url.Values{"tag": {tag}, "n": {strconv.Itoa(n)}, "nonce": {nonce}}.Encode()
}

// Counts returns a copy of what the sites served so far.
func (s *Sites) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.served)
}

// count counts a card page (what 0) or a post (what 1) served for tag.
func (s *Sites) count(tag string, what int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.served[tag]
	v[what]++
	s.served[tag] = v
}

func (s *Sites) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /card", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		n, err := strconv.Atoi(q.Get("n"))
		if err != nil {
			http.Error(w, "n: want an integer", http.StatusBadRequest)
			return
		}
		tag, nonce := q.Get("tag"), q.Get("nonce")
		embeds := make([]string, 0, len(s.hosts)-1)
		for i := 1; i < len(s.hosts); i++ {
			embeds = append(embeds, s.base(i)+"/embed?"+url.Values{
				"tag": {tag}, "n": {strconv.Itoa(n)}, "k": {strconv.Itoa(i)}, "nonce": {nonce},
			}.Encode())
		}
		s.count(tag, 0)
		writeHTML(w, HTML(n, nonce, embeds))
	})
	mux.HandleFunc("GET /embed", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		n, err1 := strconv.Atoi(q.Get("n"))
		k, err2 := strconv.Atoi(q.Get("k"))
		if err1 != nil || err2 != nil {
			http.Error(w, "n, k: want integers", http.StatusBadRequest)
			return
		}
		s.count(q.Get("tag"), 1)
		writeHTML(w, PostHTML(n, k, q.Get("nonce")))
	})
	return mux
}

// writeHTML answers a page no cache may keep: every render loads its own.
func writeHTML(w http.ResponseWriter, page string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(page))
}

// Close stops the server and its listeners.
func (s *Sites) Close() error {
	err := s.srv.Close()
	for range cap(s.done) {
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	}
	return err
}
