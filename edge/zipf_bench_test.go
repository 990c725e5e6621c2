package edge

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/cache"
	"github.com/pictorhq/pictor/origin/contract/imaging"
)

// BenchmarkZipfHits is zipf-10k's request in process: renditions of 4–24
// KiB drawn by Zipf (s=1.1) from an L1 about a seventh of their total, so
// that most hits come from memory and the rest from L2's files (opened, not
// sent: the handler's work without the socket's).
func BenchmarkZipfHits(b *testing.B) {
	const (
		ids, widths = 20, 100
		n           = ids * widths
	)
	o := newFakeOrigin(b)
	e := newTunedEdge(b, o.URL, func(c *Config) { c.CacheMem = 4 << 20 })
	uris := make([][]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	total := 0
	for i := range n {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i/widths, i/widths)
		query := fmt.Sprintf("width=%d", 300+i%widths)
		opts, err := imaging.Parse(imaging.JPEG, []byte(query))
		if err != nil {
			b.Fatal(err)
		}
		key := opts.Key([]byte("i|" + id + "|jpg|"))
		body := noisy(4<<10 + r.IntN(20<<10))
		total += len(body)
		ent := &cache.Entry{Body: body, ContentType: "image/jpeg", ETag: fmt.Sprintf(`"%d"`, i), OrgID: "org", ImageID: id}
		if err := e.cache.Put(key, ent); err != nil {
			b.Fatal(err)
		}
		uris[i] = fmt.Appendf(nil, "/v1/image/%s.jpg?%s", id, query)
	}
	// Popularity unrelated to the image or the width, as in zipf-10k.
	perm := rand.New(rand.NewPCG(3, 4)).Perm(n)
	cdf := make([]float64, n)
	sum := 0.0
	for k := range cdf {
		sum += math.Pow(float64(k+1), -1.1)
		cdf[k] = sum
	}
	draw := func() int {
		return perm[min(sort.SearchFloat64s(cdf, r.Float64()*sum), n-1)]
	}
	var ctx fasthttp.RequestCtx
	for range 20000 { // warm L1 as the scenario's warmup does
		ctx.Request.SetRequestURIBytes(uris[draw()])
		e.handle(&ctx)
		ctx.Response.Reset()
	}
	asked := o.gets.Load()
	before := e.cache.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Request.SetRequestURIBytes(uris[draw()])
		e.handle(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		ctx.Response.Reset() // closes a body file the answer did not send
	}
	b.StopTimer()
	if o.gets.Load() != asked {
		b.Fatal("the origin was asked: not every request was a hit")
	}
	s := e.cache.Stats()
	l1, l2 := s.L1Hits-before.L1Hits, s.L2Hits-before.L2Hits
	b.ReportMetric(100*float64(l1)/float64(l1+l2), "%L1")
	b.ReportMetric(float64(total)/n, "B/rendition")
}
