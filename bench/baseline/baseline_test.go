package baseline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/load"
)

func TestNginxConfigText(t *testing.T) {
	conf := nginxConfig{Dir: "/tmp/b/nginx", Root: "/tmp/b/www", Addr: "127.0.0.1:4321", Files: 20000}.text()
	for _, want := range []string{
		"worker_rlimit_nofile 20000;",
		"worker_connections 4096;",
		"open_file_cache max=15840 inactive=60s;", // 20000 less the connections and 64
		"worker_processes auto;",
		"pid /tmp/b/nginx/nginx.pid;",
		"error_log /tmp/b/nginx/error.log warn;",
		"access_log off;",
		"sendfile on;",
		"keepalive_timeout 75s;",
		"keepalive_requests 1000000;", // one connection per client for the whole run, as on the edge
		"client_body_temp_path /tmp/b/nginx/client_body;",
		"image/jpeg jpg;",
		"image/webp webp;",
		"listen 127.0.0.1:4321;",
		"root /tmp/b/www;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "daemon") {
		t.Error("daemon off comes from -g; in the file too nginx refuses to start")
	}
	if strings.Count(conf, "{") != strings.Count(conf, "}") {
		t.Errorf("unbalanced braces:\n%s", conf)
	}
	for i, line := range strings.Split(conf, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") && !strings.HasSuffix(l, ";") && !strings.HasSuffix(l, "{") && l != "}" {
			t.Errorf("line %d %q does not end a directive", i+1, l)
		}
	}
}

func TestOpenFileCache(t *testing.T) {
	tests := []struct {
		name  string
		files int
		want  int
	}{
		{"limit unknown", 0, 20000},
		{"a large limit", 1 << 20, 20000},
		{"20,000 files", 20000, 15840},
		{"below the connections", 1024, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := openFileCache(tt.files); got != tt.want {
				t.Fatalf("openFileCache(%d) = %d, want %d", tt.files, got, tt.want)
			}
		})
	}
	conf := nginxConfig{Dir: "/d", Root: "/r", Addr: "127.0.0.1:1"}.text()
	if strings.Contains(conf, "worker_rlimit_nofile") || !strings.Contains(conf, "open_file_cache max=20000 ") {
		t.Errorf("without a limit, the config sets one or changes the cache:\n%s", conf)
	}
}

// TestNginxMoreFilesThanDescriptors serves more distinct files than a
// worker may hold open: every one must be a 200, not the 500 of a worker
// whose open-file cache took every descriptor (which zipf-100k's 100,000
// files met under a limit of 20,000).
func TestNginxMoreFilesThanDescriptors(t *testing.T) {
	bin, err := lookTool("nginx")
	if err != nil {
		t.Fatalf("nginx is missing (apt-get install -y nginx-light): %v", err)
	}
	const files, limit = 600, 256
	work := t.TempDir()
	root := filepath.Join(work, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("%d.jpg", i)), []byte(fmt.Sprintf("file %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := makeReadable(root); err != nil {
		t.Fatal(err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := startNginx(context.Background(), bin, nginxConfig{Dir: dir, Root: root, Addr: addr, Files: limit}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
	}()
	k := load.NewKeepAlive(addr, nil)
	defer k.Close()
	for i := range files {
		a, err := k.Get(fmt.Sprintf("/%d.jpg", i))
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		if a.Status != 200 || string(a.Body) != fmt.Sprintf("file %d", i) {
			t.Fatalf("file %d of %d under a limit of %d open files: status %d, body %.60q; %s", i, files, limit, a.Status, a.Body, n.errorLogTail())
		}
	}
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"empty", nil, ""},
		{"last line", []string{"a\nb\n", "c error\n\n"}, "c error"},
		{"keeps only the end", []string{strings.Repeat("x", 5000) + "\nfinal"}, "final"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tb tailBuffer
			for _, w := range tt.writes {
				tb.Write([]byte(w))
			}
			if len(tb.b) > 4096 {
				t.Fatalf("kept %d bytes", len(tb.b))
			}
			if got := tb.lastLine(); got != tt.want {
				t.Fatalf("lastLine = %q, want %q", got, tt.want)
			}
		})
	}
}
