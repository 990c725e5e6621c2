package og

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/ogconfig"
)

// page is what the service knows of one path of a configuration's site,
// stored under pageKey: what its last read said, when to read it again,
// and the images made from it.
type page struct {
	ConfigID string `json:"config_id"`
	Path     string `json:"path"`
	// Revision is the configuration's revision the page was read under:
	// another revision reads it again before serving.
	Revision int64 `json:"revision"`

	// Generation is the configuration's RefreshGeneration the page was
	// read under: an older one is read again, unconditionally, at the next
	// request (a refresh of every page was asked since).
	Generation int64 `json:"generation,omitempty"`

	CheckedAt  time.Time `json:"checked_at"`
	FreshUntil time.Time `json:"fresh_until"`
	// ETag and LastModified are the source's validators, for a conditional
	// recheck.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`

	// Params is the image creation request the page resolved to (the
	// configuration's options, the page's overrides, the source or the
	// expanded template), before any platform's viewport, as the parameters
	// the renderer takes: images for further platforms are made from it
	// without reading the page again, or parsing anything. Nil when the
	// request breaks a rule (its render fails, saying which).
	Params *imageparams.Params `json:"params,omitempty"`
	// Request is the same request as JSON, as it was resolved: what names
	// the page's inputs (sameInputs, identity), and what the release
	// before Params reads (see migratePages).
	Request json.RawMessage `json:"request"`
	// Extra is what, beyond Request, names the image: configuration,
	// revision, content_version, template version.
	Extra string `json:"extra"`
	// Images maps a variant (a platform name with set_viewport, else "")
	// to the id of its image. Only images that rendered are here.
	Images map[string]string `json:"images"`
}

// pageKey is og-page/<config_id>/<sha-256 of the path, 128 bits, hex>.
func pageKey(configID, path string) []byte {
	sum := sha256.Sum256([]byte(path))
	return []byte("og-page/" + configID + "/" + hex.EncodeToString(sum[:16]))
}

// pagePrefix holds every page of a configuration.
func pagePrefix(configID string) []byte { return []byte("og-page/" + configID + "/") }

func loadPage(ctx context.Context, r kv.Reader, configID, path string) (*page, error) {
	raw, err := r.Get(ctx, pageKey(configID, path))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read OG page %s: %w", path, err)
	}
	p, err := decodePage(raw)
	if err != nil {
		return nil, fmt.Errorf("decode OG page %s: %w", path, err)
	}
	if p.Path != path { // a hash collision: treat as unknown
		return nil, nil
	}
	return p, nil
}

// decodePage decodes a stored record. One without Params (written by the
// release before them, which still runs during an upgrade) gets them from
// its Request.
func decodePage(raw []byte) (*page, error) {
	var p page
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Params == nil {
		p.Params = requestParams(p.Request)
	}
	return &p, nil
}

func savePage(w kv.Writer, p *page) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := w.Put(pageKey(p.ConfigID, p.Path), raw); err != nil {
		return fmt.Errorf("store OG page %s: %w", p.Path, err)
	}
	return nil
}

// due reports whether the page is to be read again: its refresh interval
// is over, or a refresh of every page of its configuration was asked
// since it was read.
func (p *page) due(cfg *ogconfig.Config, now time.Time) bool {
	return !now.Before(p.FreshUntil) || p.Generation < cfg.RefreshGeneration
}

// sameInputs reports whether p and q were resolved to the same image
// inputs, and so have the same images.
func (p *page) sameInputs(q *page) bool {
	return p.Revision == q.Revision && bytes.Equal(p.Request, q.Request) && p.Extra == q.Extra
}

// scale is the device scale the page's image is rendered at, as the edge
// is told it in fit mode: the request's device_scale, 1 when unset (or
// when the request breaks a rule).
func (p *page) scale() float64 {
	if p.Params == nil || p.Params.RequestedDeviceScale <= 0 {
		return 1
	}
	return p.Params.RequestedDeviceScale
}

// identity names the page's card: a hash of its inputs (128 bits, hex).
func (p *page) identity() string {
	h := sha256.New()
	h.Write(p.Request)
	h.Write([]byte{0})
	h.Write([]byte(p.Extra))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// supersedes reports whether cur, the record in the store, is to be kept
// rather than replaced by next, a read that began at since: cur is of a
// later revision of the configuration, or was read after since (a
// refresh, or another origin's read, finished while this one ran). A zero
// since replaces whatever the revision allows (a refresh).
func supersedes(cur, next *page, since time.Time) bool {
	if cur.Revision != next.Revision {
		return cur.Revision > next.Revision
	}
	return !since.IsZero() && cur.CheckedAt.After(since)
}

// clone returns a copy that can be changed without touching p.
func (p *page) clone() *page {
	c := *p
	c.Images = make(map[string]string, len(p.Images))
	for k, v := range p.Images {
		c.Images[k] = v
	}
	return &c
}
