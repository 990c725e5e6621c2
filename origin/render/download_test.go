package render

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDownloadsDenied: a page that starts a download (a navigation to an
// attachment, a download link) writes nothing to the server's disk. The
// file's server sends a first part and holds the rest until the check is
// done, so a download that started would still be on disk when the
// downloads directory is read. (Headless Chromium also denies downloads by
// default; the tab denies them explicitly, so a change of that default
// cannot let them through.)
func TestDownloadsDenied(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // Chromium saves downloads to $HOME/Downloads
	release := make(chan struct{})
	var served atomic.Bool // the first page has been served
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/file") {
			w.Header().Set("Content-Disposition", `attachment; filename="report.bin"`)
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", "2000000")
			w.Write(make([]byte, 1_000_000))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if served.Swap(true) {
			w.Write([]byte(`<a id=a download href="/file2">x</a><script>document.getElementById('a').click()</script><div style="width:100px;height:50px;background:red"></div>`))
			return
		}
		w.Write([]byte(`<div style="width:100px;height:50px;background:red"></div><script>setTimeout(() => { location.href = "/file1" }, 10)</script>`))
	}))
	defer srv.Close()
	defer close(release)
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := e.Render(ctx, &Request{OrgID: "o", URL: srv.URL + "/", DeviceScale: 1, MaxWait: 2 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
		cancel()
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		var files []string
		filepath.WalkDir(filepath.Join(home, "Downloads"), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		if len(files) > 0 {
			t.Fatalf("render %d: the page's download reached the disk: %v", i, files)
		}
	}
}
