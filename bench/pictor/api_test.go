package pictor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/internal/benchtest"
)

// fakeImageAPI is enough of Pictor's API for RenderPage: POST /v1/image
// records the body and answers an id, GET /v1/image/<id> answers png.
func fakeImageAPI(t *testing.T, png []byte, contentType string) (*Server, *map[string]any) {
	t.Helper()
	var body map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/image", func(w http.ResponseWriter, r *http.Request) {
		if id, key, ok := r.BasicAuth(); !ok || id != "id" || key != "key" {
			http.Error(w, "credentials", http.StatusUnauthorized)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"id":"img1","url":"unused"}`)
	})
	mux.HandleFunc("GET /v1/image/img1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(png)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &Server{URL: srv.URL, APIID: "id", APIKey: "key", Client: srv.Client()}, &body
}

func TestRenderPage(t *testing.T) {
	png := append(benchtest.PNGHead(2*card.Width, 2*card.Height), make([]byte, 1000)...)
	tests := []struct {
		name        string
		png         []byte
		contentType string
		wantErr     string
	}{
		{"the card's PNG", png, "image/png", ""},
		{"the default viewport instead", benchtest.PNGHead(3840, 2160), "image/png", "PNG is 3840×2160"},
		{"not a PNG", png, "image/jpeg", `Content-Type "image/jpeg"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, body := fakeImageAPI(t, tt.png, tt.contentType)
			lat, err := p.RenderPage(context.Background(), "http://127.0.0.1:1/card?n=1")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || lat <= 0 {
				t.Fatalf("RenderPage = %v, %v", lat, err)
			}
			want := map[string]any{"url": "http://127.0.0.1:1/card?n=1", "viewport_width": float64(card.Width),
				"viewport_height": float64(card.Height), "device_scale": float64(card.Scale)}
			if fmt.Sprint(*body) != fmt.Sprint(want) {
				t.Fatalf("POST body %v, want %v", *body, want)
			}
		})
	}
}

func TestParseCounters(t *testing.T) {
	text := `# HELP pictor_edge_hits_l1_total Image requests answered from memory.
# TYPE pictor_edge_hits_l1_total counter
pictor_edge_hits_l1_total 12345
pictor_edge_hits_l2_total 6.5e+06
pictor_edge_forwarded_total{code="200"} 3
pictor_edge_misses_total 0
pictor_origin_http_request_duration_seconds_sum{route="GET /v1/og/{domain_id}/{path...}"} 1.25 1700000000000
pictor_edge_cache_bytes{level="l1"} 42
`
	tests := []struct {
		name    string
		names   []string
		want    map[string]float64
		wantErr string
	}{
		{"present", []string{"pictor_edge_hits_l1_total", "pictor_edge_hits_l2_total", "pictor_edge_misses_total"},
			map[string]float64{"pictor_edge_hits_l1_total": 12345, "pictor_edge_hits_l2_total": 6.5e6, "pictor_edge_misses_total": 0}, ""},
		{"labelled, a space in a label value, a timestamp", []string{`pictor_origin_http_request_duration_seconds_sum{route="GET /v1/og/{domain_id}/{path...}"}`,
			`pictor_edge_cache_bytes{level="l1"}`, "pictor_edge_misses_total"},
			map[string]float64{`pictor_origin_http_request_duration_seconds_sum{route="GET /v1/og/{domain_id}/{path...}"}`: 1.25,
				`pictor_edge_cache_bytes{level="l1"}`: 42, "pictor_edge_misses_total": 0}, ""},
		{"missing", []string{"pictor_edge_hits_l1_total", "pictor_edge_transform_duration_seconds_count"}, nil, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCounters(bufio.NewScanner(strings.NewReader(text)), tt.names...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrMetricMissing) {
					t.Fatalf("err = %v, want %q (ErrMetricMissing)", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %v, %v", got, err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

// TestOGAPI drives CreateOGConfig, FetchTimed and OriginMetrics against a
// fake edge and origin.
func TestOGAPI(t *testing.T) {
	var posted map[string]any
	edge := http.NewServeMux()
	edge.HandleFunc("POST /v1/og-configs", func(w http.ResponseWriter, r *http.Request) {
		if id, key, ok := r.BasicAuth(); !ok || id != "id" || key != "key" {
			http.Error(w, "credentials", http.StatusUnauthorized)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&posted); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"id":"cfg1","domain_id":"dom1","config_type":"html_css"}`)
	})
	edge.HandleFunc("GET /v1/og/dom1/{path...}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		fmt.Fprintf(w, "%s|%s", r.URL.Path, r.UserAgent())
	})
	edge.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "pictor_edge_misses_total 1")
	})
	origin := http.NewServeMux()
	origin.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "pictor_render_duration_seconds_sum 0.5\npictor_render_duration_seconds_count 4")
	})
	es, ors := httptest.NewServer(edge), httptest.NewServer(origin)
	defer es.Close()
	defer ors.Close()
	p := &Server{URL: es.URL, OriginURL: ors.URL, APIID: "id", APIKey: "key", Client: es.Client()}
	ctx := context.Background()

	c, err := p.CreateOGConfig(ctx, "http://127.0.0.1:9/")
	if err != nil || c != (OGConfig{ID: "cfg1", DomainID: "dom1"}) {
		t.Fatalf("CreateOGConfig = %+v, %v", c, err)
	}
	if want := map[string]any{"config_type": "html_css", "base_url": "http://127.0.0.1:9/"}; fmt.Sprint(posted) != fmt.Sprint(want) {
		t.Fatalf("posted %v, want %v", posted, want)
	}
	lat, body, ct, err := p.FetchTimed(ctx, "/v1/og/dom1/p/1", "Twitterbot/1.0")
	if err != nil || lat <= 0 || string(body) != "/v1/og/dom1/p/1|Twitterbot/1.0" || ct != "image/png" {
		t.Fatalf("FetchTimed = %v, %q, %q, %v", lat, body, ct, err)
	}
	if _, _, _, err := p.FetchTimed(ctx, "/v1/og/other/p/1", ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("FetchTimed of a 404 = %v", err)
	}
	if body, _, err := p.FetchAs(ctx, "/v1/og/dom1/x", "LinkedInBot/1.0"); err != nil || string(body) != "/v1/og/dom1/x|LinkedInBot/1.0" {
		t.Fatalf("FetchAs = %q, %v", body, err)
	}

	vals, err := p.OriginMetrics(ctx, "pictor_render_duration_seconds_sum", "pictor_render_duration_seconds_count")
	if err != nil || vals["pictor_render_duration_seconds_sum"] != 0.5 || vals["pictor_render_duration_seconds_count"] != 4 {
		t.Fatalf("OriginMetrics = %v, %v", vals, err)
	}
	if _, err := p.Metrics(ctx, "pictor_render_duration_seconds_sum"); err == nil {
		t.Fatal("the edge's metrics answered the origin's")
	}
	p.OriginURL = ""
	if _, err := p.OriginMetrics(ctx, "pictor_render_duration_seconds_sum"); err == nil || !strings.Contains(err.Error(), "no origin address") {
		t.Fatalf("OriginMetrics without an origin = %v", err)
	}
}
