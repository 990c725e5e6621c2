package bench

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/bench/report"
)

func TestClusterChecks(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	result := func(what, side string, clients, ok int, lo, hi time.Duration, rounds ...float64) *load.Result {
		r := benchtest.Result(clusterResult(what, side), clients, ok, 0, 10*time.Second, lo, hi)
		r.Unit, r.Rounds = "request", rounds
		if what == clusterRender {
			r.Unit = "render"
		}
		return r
	}
	createE := result(clusterCreate, sideEmbedded, 1, 101, 200*us, 400*us)
	createFast := result(clusterCreate, sideCluster, 1, 101, 1*ms, 3*ms)   // p50 2 ms: +1.7 ms
	createSlow := result(clusterCreate, sideCluster, 1, 101, 2*ms, 6*ms)   // p50 4 ms: +3.7 ms
	readE := result(clusterRead, sideEmbedded, 1, 101, 100*us, 300*us)     // p50 0.2 ms
	readC := result(clusterRead, sideCluster, 1, 101, 2000*us, 2200*us)    // p50 2.1 ms: +1.9 ms
	readNone := result(clusterRead, sideCluster, 1, 0, 0, 0)               // nothing succeeded
	renderE := result(clusterRender, sideEmbedded, 4, 80, ms, ms, 7, 9)    // 8/s, rounds 25 % apart
	renderClose := result(clusterRender, sideCluster, 4, 64, ms, ms, 6, 7) // 6.4/s: 0.80×
	renderFar := result(clusterRender, sideCluster, 4, 40, ms, ms, 4, 4)   // 4/s: 0.50×
	renderOne := result(clusterRender, sideCluster, 4, 79, ms, ms, 7.9)    // one round: 0.99×
	createName := "cluster/create-cluster p50 ≤ cluster/create-embedded's + 2.00 ms"
	readName := "cluster/read-cluster p50 ≤ cluster/read-embedded's + 2.00 ms"
	renderName := "cluster/render-cluster throughput within the noise of cluster/render-embedded's"
	tests := []struct {
		name    string
		results []*load.Result
		want    []report.CheckResult
	}{
		{"the embedded side alone: no check", []*load.Result{createE, readE, renderE}, nil},
		{
			name:    "all pass",
			results: []*load.Result{createE, createFast, readE, readC, renderE, renderClose},
			want: []report.CheckResult{
				{Name: createName, Measured: "+1.70 ms (p50 2.00 ms − 0.300 ms)", Pass: true},
				{Name: readName, Measured: "+1.91 ms (p50 2.11 ms − 0.200 ms)", Pass: true},
				{Name: renderName, Measured: "0.80× (6.40 renders/s ÷ 8.00 renders/s); rounds spread by up to 25 %", Pass: true},
			},
		},
		{
			name:    "all fail",
			results: []*load.Result{createE, createSlow, readE, readNone, renderE, renderFar},
			want: []report.CheckResult{
				{Name: createName, Measured: "+3.71 ms (p50 4.01 ms − 0.300 ms)", Pass: false},
				{Name: readName, Measured: "no successful requests to compare", Pass: false},
				{Name: renderName, Measured: "0.50× (4.00 renders/s ÷ 8.00 renders/s); rounds spread by up to 25 %", Pass: false},
			},
		},
		{
			name:    "one round: no allowance for noise",
			results: []*load.Result{renderE, renderOne},
			want:    []report.CheckResult{{Name: renderName, Measured: "0.99× (7.90 renders/s ÷ 8.00 renders/s); one round: no noise measured", Pass: false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(clusterChecks(), tt.results)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("check %d:\ngot  %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestClusterTargetBase sends a side's requests to its edges in turn.
func TestClusterTargetBase(t *testing.T) {
	c := &clusterTarget{bases: []string{"http://e1", "http://e2"}}
	var got []string
	for range 5 {
		got = append(got, c.base())
	}
	if want := []string{"http://e1", "http://e2", "http://e1", "http://e2", "http://e1"}; !slices.Equal(got, want) {
		t.Fatalf("bases %v, want %v", got, want)
	}
}

// TestClusterMasterOp: the master runs GET the image straight from the
// origins in turn, to the last byte, and fail on anything but a PNG.
func TestClusterMasterOp(t *testing.T) {
	var hits [2]atomic.Int64
	origin := func(i int, ct string) *pictor.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			if r.URL.Path != "/v1/image/abc" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", ct)
			w.Write([]byte("\x89PNG bytes"))
		}))
		t.Cleanup(srv.Close)
		return &pictor.Server{OriginURL: srv.URL}
	}
	c := &clusterTarget{origins: []*pictor.Server{origin(0, "image/png"), origin(1, "image/png")}, masterPath: "/v1/image/abc",
		client: http.DefaultClient}
	for range 4 {
		if _, err := c.masterOp(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if hits[0].Load() != 2 || hits[1].Load() != 2 {
		t.Fatalf("origins hit %d and %d times, want 2 each", hits[0].Load(), hits[1].Load())
	}
	bad := &clusterTarget{origins: []*pictor.Server{origin(0, "text/html")}, masterPath: "/v1/image/abc", client: http.DefaultClient}
	if _, err := bad.masterOp(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "want a PNG") {
		t.Fatalf("a non-PNG answer: %v, want an error", err)
	}
}
