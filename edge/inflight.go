package edge

import (
	"log/slog"
	"sort"
	"sync"
	"time"
)

// inflight lists the requests that may take long (relayed to the origin,
// or filling the cache), so that a forced shutdown can say which were cut
// off and for how long they had run. Cache hits are not listed: they never
// wait.
type inflight struct {
	mu   sync.Mutex
	next uint64
	reqs map[uint64]request
}

// request is an in-flight request, as logged.
type request struct {
	id, method, path string
	start            time.Time
}

// begin lists a request and returns the token that ends it.
func (f *inflight) begin(id, method, path string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reqs == nil {
		f.reqs = map[uint64]request{}
	}
	f.next++
	f.reqs[f.next] = request{id: id, method: method, path: path, start: time.Now()}
	return f.next
}

func (f *inflight) end(token uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.reqs, token)
}

// maxLogged bounds the requests a log line names.
const maxLogged = 20

// loggedRequest is an in-flight request in a log line.
type loggedRequest struct {
	RequestID string `json:"request_id"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Running   string `json:"running"`
}

// attr lists the requests in flight, longest running first (at most
// maxLogged of them), as one log attribute.
func (f *inflight) attr(now time.Time) slog.Attr {
	f.mu.Lock()
	list := make([]request, 0, len(f.reqs))
	for _, r := range f.reqs {
		list = append(list, r)
	}
	f.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].start.Before(list[j].start) })
	logged := make([]loggedRequest, 0, min(len(list), maxLogged))
	for _, r := range list[:min(len(list), maxLogged)] {
		logged = append(logged, loggedRequest{RequestID: r.id, Method: r.method, Path: r.path,
			Running: now.Sub(r.start).Round(time.Millisecond).String()})
	}
	return slog.Any("in_flight", logged)
}
