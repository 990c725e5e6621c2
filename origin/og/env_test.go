package og

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/render/rendertest"
	"github.com/pictorhq/pictor/origin/rendition"
)

// origin is one origin's OG serving path over a store, from real parts:
// the store handle, the image service beside a blob directory, the page
// fetcher behind a real egress, the configuration store. Its render
// engine was stopped before it started, as a shutting-down origin's is:
// creations charge their credits and every render fails at once
// (render.ErrStopped, recorded nowhere) without a browser. Renders
// themselves are the integration suites' (package origin, cmd/pictor).
type origin struct {
	store   kv.Store
	orgs    *org.Store
	configs *ogconfig.Store
	images  *rendition.Service
	og      *Service
	reg     *prometheus.Registry
}

// newOrigin starts an origin on a handle of a store; shared says other
// handles (origins) use the store too.
func newOrigin(t *testing.T, store kv.Store, clock *apitest.Clock, shared bool, blobDir string) *origin {
	t.Helper()
	blobs, err := blob.Open(blobDir)
	if err != nil {
		t.Fatal(err)
	}
	o := &origin{store: store, orgs: org.NewStore(store, clock.Now), configs: ogconfig.NewStore(store, clock.Now), reg: prometheus.NewRegistry()}
	ic := rendition.DefaultConfig()
	ic.Store, ic.Blobs, ic.Engine, ic.Now, ic.CompactIdle, ic.Shared = store, blobs, rendertest.Stopped(t), clock.Now, -1, shared
	o.images, err = rendition.NewService(t.Context(), ic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.images.Close)
	gc := egress.DefaultConfig()
	gc.Logger, gc.Registerer = slog.New(slog.DiscardHandler), prometheus.NewRegistry()
	gw, err := egress.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	pc := ogpage.DefaultConfig()
	pc.Gateway, pc.AllowPrivate, pc.Logger = gw, true, slog.New(slog.DiscardHandler)
	pages, err := ogpage.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Store, cfg.Configs, cfg.Orgs, cfg.Images, cfg.Pages, cfg.Templates, cfg.Caps = store, o.configs, o.orgs, o.images, pages, noTemplates{}, o.configs
	cfg.Now, cfg.Registerer, cfg.Logger = clock.Now, o.reg, slog.New(slog.DiscardHandler)
	cfg.Budget = 100_000 // the caps are what these tests look at
	if o.og, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.og.Close)
	return o
}

// noTemplates serves html_css configurations only: nothing here is
// templated.
type noTemplates struct{}

func (noTemplates) Expand(context.Context, string, *field.Object, string, int) (*field.Object, string, int, error) {
	return nil, "", 0, errors.New("no templates in this test")
}

// serve answers the OG route as the origin's router does.
func (o *origin) serve(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET /v1/og/{domain_id}/{path...}", o.og)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// config saves an html_css configuration of the organization for base.
func (o *origin) config(t *testing.T, ow *org.Org, base string, day, period *int64) *ogconfig.Config {
	t.Helper()
	c, err := o.configs.Create(context.Background(), ow.ID, ogconfig.Request{ConfigType: ogconfig.HTMLCSS, BaseURL: base,
		RefreshInterval: ogconfig.DefaultRefreshInterval, OptimizationMode: ogconfig.PostProcess, ExtractValues: true,
		MaxNewImagesPerDay: day, MaxNewImagesPerPeriod: period})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// item is an image of html, as the OG path makes one: content-addressed.
func item(t testing.TB, ow *org.Org, html, extra string) rendition.Item {
	t.Helper()
	raw, _ := json.Marshal(html)
	p, err := imageparams.Parse(field.FromJSON(map[string]json.RawMessage{"html": raw}), imageparams.Options{RequireSource: true})
	if err != nil {
		t.Fatal(err)
	}
	return rendition.Item{Params: p, ID: rendition.ContentID(ow.ID, &p, extra)}
}

// refused reads pictor_og_refused_total{reason}.
func (o *origin) refused(t *testing.T, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := o.og.metrics.refused.WithLabelValues(reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// site answers 200 with a page for every path, as most single-page apps
// do.
func site(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><html><head><title>App</title></head><body style="background:#08f"></body></html>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}
