package baseline

import (
	"strings"
	"testing"
)

func TestNginxConfigText(t *testing.T) {
	conf := nginxConfig{Dir: "/tmp/b/nginx", Root: "/tmp/b/www", Addr: "127.0.0.1:4321"}.text()
	for _, want := range []string{
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
