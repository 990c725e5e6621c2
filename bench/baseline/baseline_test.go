package baseline

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/proc"
)

func TestNginxConfigText(t *testing.T) {
	conf := nginxConfig{Dir: "/tmp/b/nginx", Root: "/tmp/b/www", Addr: "127.0.0.1:4321", Files: 20000}.text()
	for _, want := range []string{
		"worker_rlimit_nofile 20000;",
		"worker_connections 4096;",
		"open_file_cache max=15840 inactive=60s;", // 20000 less the connections and 64
		fmt.Sprintf("worker_processes %d;", runtime.NumCPU()),
		"pid /tmp/b/nginx/nginx.pid;",
		"error_log /tmp/b/nginx/error.log warn;",
		"access_log off;",
		"sendfile on;",
		"keepalive_timeout 75s;",
		"keepalive_requests 1000000;", // one connection per client for the whole run, as on the edge
		"client_body_temp_path /tmp/b/nginx/client_body;",
		"image/jpeg jpg;",
		"image/webp webp;",
		"listen 127.0.0.1:4321 reuseport;",
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

// TestNginxWorkersShareConnections opens the bench's 32 keep-alive
// connections to nginx (16 per worker on a machine with more than two
// CPUs) 16 times, at once as the bench does, and wants every worker to
// hold some of them every time. With one listening socket shared by the
// workers, one worker took all 32 in about a quarter of the tries, and
// nginx ran on one worker.
func TestNginxWorkersShareConnections(t *testing.T) {
	bin, err := lookTool("nginx")
	if err != nil {
		t.Fatalf("nginx is missing (apt-get install -y nginx-light): %v", err)
	}
	work := t.TempDir()
	root := filepath.Join(work, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.jpg"), []byte("jpeg"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := StartNginx(context.Background(), nil, bin, root, work)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
	}()
	workers := runtime.NumCPU()
	clients := max(32, 16*workers)
	for round := range 16 {
		conns := make([]*load.KeepAlive, clients)
		var g errgroup.Group
		for c := range conns {
			conns[c] = load.NewKeepAlive(n.Addr, nil)
			g.Go(func() error {
				a, err := conns[c].Get("/a.jpg")
				if err == nil && a.Status != 200 {
					err = fmt.Errorf("GET /a.jpg: status %d", a.Status)
				}
				return err
			})
		}
		err := g.Wait()
		var held map[int]int
		if err == nil {
			held, err = connectionsByWorker(n.cmd.Process.Pid, n.Addr, conns)
		}
		for _, c := range conns {
			c.Close()
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(held) != workers {
			t.Fatalf("round %d: %d workers (%v), want %d, one per CPU", round, len(held), held, workers)
		}
		for pid, k := range held {
			if k == 0 {
				t.Fatalf("round %d: worker %d holds none of the %d connections (held: %v)", round, pid, clients, held)
			}
		}
	}
}

// connectionsByWorker returns, for each worker of the nginx master, how
// many of conns (client ends, each open) it holds the server end of: the kernel's
// TCP table gives the socket of each connection (local address server,
// remote address the client's: another test's server may have a
// connection from the same client port), and a worker's file descriptors
// the sockets it holds.
func connectionsByWorker(master int, server string, conns []*load.KeepAlive) (map[int]int, error) {
	srv, err := net.ResolveTCPAddr("tcp", server)
	if err != nil {
		return nil, err
	}
	local := tcpTableAddr(srv)
	clients := map[string]bool{}
	for _, c := range conns {
		a, ok := c.LocalAddr().(*net.TCPAddr)
		if !ok {
			return nil, fmt.Errorf("a connection closed after its GET (local address %v)", c.LocalAddr())
		}
		clients[tcpTableAddr(a)] = true
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	sockets := map[string]bool{} // "socket:[inode]" of the server ends
	for _, line := range strings.Split(string(table), "\n")[1:] {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		// (st 01: established)
		f := strings.Fields(line)
		if len(f) >= 10 && f[1] == local && clients[f[2]] && f[3] == "01" {
			sockets["socket:["+f[9]+"]"] = true
		}
	}
	if len(sockets) != len(conns) {
		return nil, fmt.Errorf("found the server end of %d of %d connections in /proc/net/tcp", len(sockets), len(conns))
	}
	held := map[int]int{}
	for _, pid := range proc.Children(master) {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return nil, err
		}
		held[pid] = 0
		for _, fd := range fds {
			if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && sockets[link] {
				held[pid]++
			}
		}
	}
	return held, nil
}

// tcpTableAddr writes an IPv4 address as /proc/net/tcp does: the four
// bytes as one little-endian hex word, a colon, the port in hex.
func tcpTableAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}
