package pictor

import (
	"bufio"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestReadAnnouncement(t *testing.T) {
	firstStart := `
Pictor created the default organization (plan scale). Its API key is shown only this once:

  org_id:  01a200e3-a5a1-7df1-bfc5-685c2b007a53
  api_id:  f0fe0d70-76c9-45ca-bc42-b3f6758fae0b
  api_key: e7526700e77f6448ea68c766100a92099fcbdf02039e0071

Use them as HTTP Basic credentials (api_id:api_key).

Pictor is listening on http://127.0.0.1:35839 (origin API on http://127.0.0.1:33173)
Base URL: http://127.0.0.1:35839
`
	tests := []struct {
		name    string
		stdout  string
		want    serveInfo
		wantErr string
	}{
		{
			name:   "first start",
			stdout: firstStart,
			want: serveInfo{URL: "http://127.0.0.1:35839", OriginURL: "http://127.0.0.1:33173", APIID: "f0fe0d70-76c9-45ca-bc42-b3f6758fae0b",
				APIKey: "e7526700e77f6448ea68c766100a92099fcbdf02039e0071"},
		},
		{
			name:   "no origin announced",
			stdout: "  api_id:  a\n  api_key: k\nPictor is listening on http://127.0.0.1:1\nBase URL: http://127.0.0.1:1\n",
			want:   serveInfo{URL: "http://127.0.0.1:1", APIID: "a", APIKey: "k"},
		},
		{
			name:    "restart on an old data directory prints no credentials",
			stdout:  "Pictor is listening on http://127.0.0.1:1 (origin API on http://127.0.0.1:2)\nBase URL: http://127.0.0.1:1\n",
			wantErr: "lacks the address or the default credentials",
		},
		{
			name:    "exits before announcing",
			stdout:  "  api_id:  a\n",
			wantErr: io.ErrUnexpectedEOF.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			got, err := readAnnouncement(bufio.NewScanner(strings.NewReader(tt.stdout)), &log)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if !strings.Contains(log.String(), "Base URL:") {
				t.Fatalf("the announcement was not copied to the log: %q", log.String())
			}
		})
	}
}

func TestUsageFlags(t *testing.T) {
	// The usage text of `pictor serve -h` as Go's flag package prints it.
	const usage = `Usage of serve:
  -addr string
    	public listen address (edge) (default "127.0.0.1:8080")
  -allow-private-urls
    	let renders reach loopback and private networks
  -chromium-no-sandbox
    	turn Chromium's sandbox off
  -render-tabs int
    	Chromium tabs rendering at once (default 2)
  -v	verbose
`
	got := usageFlags(usage)
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"addr", "allow-private-urls", "chromium-no-sandbox", "render-tabs", "v"}; !slices.Equal(names, want) {
		t.Fatalf("usageFlags = %v, want %v", names, want)
	}
}

func TestServeEnv(t *testing.T) {
	got := serveEnv([]string{"PATH=/bin", "PICTOR_PUBLIC_URL=https://x", "HOME=/root", "PICTOR_LOG_LEVEL=debug"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/root" {
		t.Fatalf("serveEnv kept %v", got)
	}
}
