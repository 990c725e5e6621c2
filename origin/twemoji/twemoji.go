package twemoji

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Prefix is the path under which Handler serves the images; Script builds
// image addresses as base + Prefix + "<codepoints>.svg".
const Prefix = "/twemoji/"

// Limits on what the archive may hold. The largest Twemoji SVG is 26 KB and
// the whole set 8.3 MB; a file past these limits means a broken rebuild.
const (
	maxFile  = 256 << 10
	maxTotal = 32 << 20
	maxName  = 80 // the longest name, a kiss with two skin tones, has 55 bytes
)

var (
	//go:embed svg.tar.bz2
	archive []byte
	//go:embed twemoji.min.js
	parser string
)

// image is one SVG with its Content-Length precomputed.
type image struct {
	body   []byte
	length string
}

var (
	indexOnce sync.Once
	warmOnce  sync.Once
	images    map[string]image // keyed by codepoints, without ".svg"
	indexErr  error
)

// index decompresses the archive on first use and returns the images.
func index() (map[string]image, error) {
	indexOnce.Do(func() {
		images, indexErr = readArchive(bzip2.NewReader(bytes.NewReader(archive)))
		if indexErr != nil {
			slog.Error("twemoji archive unreadable", "err", indexErr)
		}
	})
	return images, indexErr
}

// readArchive reads every <codepoints>.svg of a tar stream into one buffer.
func readArchive(r io.Reader) (map[string]image, error) {
	type span struct{ start, end int }
	spans := map[string]span{}
	buf := make([]byte, 0, 9<<20)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read twemoji archive: %w", err)
		}
		name, ok := strings.CutSuffix(h.Name, ".svg")
		if h.Typeflag != tar.TypeReg || !ok || !validName(name) {
			continue
		}
		if h.Size <= 0 || h.Size > maxFile || len(buf)+int(h.Size) > maxTotal {
			return nil, fmt.Errorf("read twemoji archive: %s has %d bytes", h.Name, h.Size)
		}
		start := len(buf)
		buf = slices.Grow(buf, int(h.Size))[:start+int(h.Size)]
		if _, err := io.ReadFull(tr, buf[start:]); err != nil {
			return nil, fmt.Errorf("read twemoji archive %s: %w", h.Name, err)
		}
		spans[name] = span{start, len(buf)}
	}
	if len(spans) == 0 {
		return nil, errors.New("read twemoji archive: no SVG files")
	}
	m := make(map[string]image, len(spans))
	for name, s := range spans {
		m[name] = image{body: buf[s.start:s.end:s.end], length: strconv.Itoa(s.end - s.start)}
	}
	return m, nil
}

// validName reports whether s looks like a Twemoji file name without its
// extension: lowercase hex code points of 1 to 6 digits joined by '-'. Only
// such names reach the index, so no path can leave it.
func validName(s string) bool {
	if s == "" || len(s) > maxName {
		return false
	}
	digits := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
			digits++
			if digits > 6 {
				return false
			}
		case c == '-' && digits > 0 && i < len(s)-1:
			digits = 0
		default:
			return false
		}
	}
	return true
}

// Handler serves GET and HEAD /twemoji/<codepoints>.svg from the embedded
// archive, for example /twemoji/1f600.svg, with a year-long immutable cache
// lifetime; any other path is 404. The archive is decompressed once, on the
// first call, in the background; requests that come earlier wait for it.
func Handler() http.Handler {
	warmOnce.Do(func() { go index() })
	return handler{}
}

type handler struct{}

var _ http.Handler = handler{}

func (handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if ok {
		name, ok = strings.CutSuffix(name, ".svg")
	}
	if !ok || !validName(name) {
		http.NotFound(w, r)
		return
	}
	imgs, err := index()
	if err != nil {
		http.Error(w, "emoji images unavailable", http.StatusInternalServerError)
		return
	}
	img, ok := imgs[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Content-Length", img.length)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(img.body)
	}
}

// style is the usual Twemoji CSS, set inline so that page rules such as
// "img { width: 100% }" cannot blow the images up.
const style = "height:1em;width:1em;margin:0 .05em 0 .1em;vertical-align:-0.1em"

// Script returns a self-contained JavaScript expression for a loaded page. It
// replaces every emoji in the text of document.body with
//
//	<img class="emoji" draggable="false" alt="😀" src="{base}/twemoji/1f600.svg">
//
// and evaluates to a Promise that resolves, with the number of emoji images
// in the body, once each of them has loaded or failed. An image that fails
// (an emoji newer than the image set) turns back into its text. base is the
// scheme and host that serve Handler, such as "http://127.0.0.1:8080"; the
// snippet names no other host.
func Script(base string) string {
	src, _ := json.Marshal(strings.TrimRight(base, "/") + Prefix) // a JSON string is a JS string literal
	return `(function () {
"use strict";
var twemoji = (function () {
` + parser + `
;return twemoji;
})();
var base = ` + string(src) + `;
var style = "` + style + `";
var root = document.body;
if (!root) return Promise.resolve(0);
twemoji.parse(root, {
  callback: function (icon) { return base + icon + ".svg"; },
  attributes: function () { return { style: style }; }
});
var imgs = Array.prototype.slice.call(root.querySelectorAll("img.emoji"));
return Promise.all(imgs.map(function (img) {
  if (img.complete) return null;
  return new Promise(function (done) {
    img.addEventListener("load", done, { once: true });
    img.addEventListener("error", done, { once: true });
  });
})).then(function () { return imgs.length; });
})()`
}
