package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
			want: serveInfo{URL: "http://127.0.0.1:35839", APIID: "f0fe0d70-76c9-45ca-bc42-b3f6758fae0b",
				APIKey: "e7526700e77f6448ea68c766100a92099fcbdf02039e0071"},
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

// pngHead returns the first 24 bytes of a PNG of size w×h.
func pngHead(w, h uint32) []byte {
	b := append([]byte{}, pngSignature...)
	b = append(b, 0, 0, 0, 13)
	b = append(b, "IHDR"...)
	b = binary.BigEndian.AppendUint32(b, w)
	return binary.BigEndian.AppendUint32(b, h)
}

func TestCheckCardPNG(t *testing.T) {
	tests := []struct {
		name    string
		head    []byte
		wantErr string
	}{
		{"the card at scale 2", pngHead(2400, 1260), ""},
		{"the default viewport instead", pngHead(3840, 2160), "PNG is 3840×2160, want 2400×1260"},
		{"scale 1", pngHead(1200, 630), "want 2400×1260"},
		{"JPEG", append([]byte("\xff\xd8\xff\xe0"), make([]byte, 20)...), "not a PNG"},
		{"short", pngSignature, "not a PNG"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCardPNG(tt.head)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("checkCardPNG = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestCardHTML(t *testing.T) {
	a, b := CardHTML(1, "x"), CardHTML(2, "x")
	if a == b || CardHTML(1, "x") != a || CardHTML(1, "y") == a {
		t.Fatal("cards are not unique per number and nonce, or not deterministic")
	}
	lower := strings.ToLower(a)
	if strings.Contains(lower, "<html") || strings.Contains(lower, "<body") {
		t.Fatal("the card must be a snippet, which Pictor crops to its content")
	}
	if !strings.Contains(a, "width:1200px;height:630px") {
		t.Fatal("the card is not 1200×630")
	}
	if !strings.Contains(CardHTML(3, "<&>"), "&lt;&amp;&gt;") {
		t.Fatal("the nonce is not escaped")
	}
	if d := CardDocument(a); !strings.HasPrefix(d, "<!DOCTYPE html>") || !strings.Contains(d, a) {
		t.Fatal("CardDocument does not wrap the card")
	}
	if !strings.Contains(a, "linear-gradient") || !strings.Contains(a, "text-shadow:0 4px") {
		t.Fatal("the card lost its gradient or its title's shadow")
	}
	flat := FlatCardHTML(1, "x")
	if strings.Contains(flat, "gradient") || !strings.Contains(flat, "text-shadow:none") ||
		!strings.Contains(flat, "width:1200px;height:630px") || !strings.Contains(flat, "card number 1 ") {
		t.Fatalf("the flat card is not the same card without gradient and shadow: %s", flat)
	}
}

func TestSelect(t *testing.T) {
	all := []Scenario{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	tests := []struct {
		name    string
		names   []string
		want    string
		wantErr error
	}{
		{"default is all", nil, "a,b,c", nil},
		{"in the order named", []string{"c", "a"}, "c,a", nil},
		{"duplicates once", []string{"b", "b"}, "b", nil},
		{"unknown", []string{"a", "zipf"}, "", ErrUnknownScenario},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(all, tt.names)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != tt.want {
				t.Fatalf("selected %v, want %s", names, tt.want)
			}
		})
	}
	for _, s := range Scenarios() {
		if s.Name == "" || s.About == "" || s.Run == nil {
			t.Errorf("scenario %+v is incomplete", s)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no binary", func(c *Config) { c.Pictor = "" }, "--pictor"},
		{"short duration", func(c *Config) { c.Duration = time.Millisecond }, "--duration"},
		{"negative warm-up", func(c *Config) { c.Warmup = -1 }, "--warmup"},
		{"no pool", func(c *Config) { c.PoolSize = 0 }, "--pool-size"},
		{"no CLI parallelism", func(c *Config) { c.CLIParallel = 0 }, "--cli-parallel"},
		{"unknown scenario", func(c *Config) { c.Scenarios = []string{"nginx"} }, "--scenarios"},
		{"no edge clients", func(c *Config) { c.EdgeClients = 0 }, "--edge-clients"},
		{"no rounds", func(c *Config) { c.Rounds = 0 }, "--rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestDrive(t *testing.T) {
	errBoom := errors.New("boom")
	// Each request of the duration case takes 5 ms of a clock that moves
	// only with requests: 50 ms is 10 requests, plus at most one more in
	// flight per client when the deadline passes.
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	tests := []struct {
		name       string
		load       Load
		op         func(n int64) (time.Duration, error)
		minN, maxN int // Requests
		minE, maxE int // Errors
		wantErr    error
	}{
		{
			name: "request count",
			load: Load{Clients: 3, Requests: 30},
			op:   func(n int64) (time.Duration, error) { return time.Duration(n) * time.Millisecond, nil },
			minN: 30, maxN: 30,
		},
		{
			name: "some failures",
			load: Load{Clients: 2, Requests: 20},
			op:   func(n int64) (time.Duration, error) { return time.Millisecond, map[bool]error{true: errBoom}[n%4 == 0] },
			minN: 20, maxN: 20,
			minE: 5, maxE: 5,
		},
		{
			name: "a dead target aborts the run",
			load: Load{Clients: 2, Duration: time.Minute},
			op:   func(int64) (time.Duration, error) { return 0, errBoom },
			minN: maxConsecutiveErrors, maxN: maxConsecutiveErrors + 2, // clients in flight finish
			minE: maxConsecutiveErrors, maxE: maxConsecutiveErrors + 2,
			wantErr: ErrAborted,
		},
		{
			name: "duration",
			load: Load{Clients: 2, Duration: 50 * time.Millisecond, now: clock.now},
			op: func(int64) (time.Duration, error) {
				clock.advance(5 * time.Millisecond)
				return 5 * time.Millisecond, nil
			},
			minN: 10, maxN: 11,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			res, err := Drive(context.Background(), "test/run", "request", tt.load, nil, func(context.Context, int) (time.Duration, error) {
				return tt.op(calls.Add(1))
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if res.Requests < tt.minN || res.Requests > tt.maxN {
				t.Errorf("Requests = %d, want %d to %d", res.Requests, tt.minN, tt.maxN)
			}
			if res.Errors < tt.minE || res.Errors > tt.maxE {
				t.Errorf("Errors = %d, want %d to %d", res.Errors, tt.minE, tt.maxE)
			}
			if res.Latency.Count() != res.Requests-res.Errors {
				t.Errorf("%d latencies for %d successes", res.Latency.Count(), res.Requests-res.Errors)
			}
			if res.Errors > 0 && res.FirstError != "boom" {
				t.Errorf("FirstError = %q", res.FirstError)
			}
			if res.Elapsed <= 0 || res.Clients != tt.load.Clients || res.Name != "test/run" {
				t.Errorf("result %+v", res)
			}
		})
	}

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		res, err := Drive(ctx, "test/cancel", "request", Load{Clients: 1, Duration: time.Minute}, nil,
			func(ctx context.Context, _ int) (time.Duration, error) {
				if calls.Add(1) == 3 {
					cancel()
					return 0, ctx.Err()
				}
				return time.Millisecond, nil
			})
		if !errors.Is(err, context.Canceled) || res.Requests != 2 || res.Errors != 0 {
			t.Fatalf("got %d requests, %d errors, %v; want 2, 0, context.Canceled", res.Requests, res.Errors, err)
		}
	})

	t.Run("bad load", func(t *testing.T) {
		for _, l := range []Load{{Clients: 0, Requests: 1}, {Clients: 1}} {
			if _, err := Drive(context.Background(), "x", "request", l, nil, nil); err == nil {
				t.Errorf("Drive accepted %+v", l)
			}
		}
	})
}

func TestProgressLine(t *testing.T) {
	tests := []struct {
		name    string
		done    int64
		errs    int64
		cur     float64
		elapsed time.Duration
		total   time.Duration
		want    string
	}{
		{"timed run", 120, 1, 18.04, 6230 * time.Millisecond, 20 * time.Second,
			"render-card/pool-full (4 clients): 120 done, 1 errors, 18.0/s now, 19.3/s avg, 6.2s/20s"},
		{"request-count run", 2, 0, 0.5, 4 * time.Second, 0,
			"render-card/pool-full (4 clients): 2 done, 0 errors, 0.50/s now, 0.50/s avg, 4s"},
		{"start", 0, 0, 0, 0, time.Second,
			"render-card/pool-full (4 clients): 0 done, 0 errors, 0.00/s now, 0.00/s avg, 0s/1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := progressLine("render-card/pool-full (4 clients)", tt.done, tt.errs, tt.cur, tt.elapsed, tt.total)
			if got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestProgressWrites(t *testing.T) {
	tests := []struct {
		name string
		tty  bool
		want []string
	}{
		{"terminal redraws in place", true, []string{"\r\033[K", "scenario x\n", "x (1 client): 5 done"}},
		{"log gets lines", false, []string{"scenario x\n", "x (1 client): 5 done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			p := NewProgress(&out, tt.tty)
			p.Notef("scenario %s", "x")
			_, err := Drive(context.Background(), "x", "request", Load{Clients: 1, Requests: 5}, p,
				func(context.Context, int) (time.Duration, error) { return 0, nil })
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q lacks %q", out.String(), w)
				}
			}
			if !tt.tty && strings.Contains(out.String(), "\r") {
				t.Errorf("non-terminal output has carriage returns: %q", out.String())
			}
		})
	}
	var nilProgress *Progress
	nilProgress.Notef("nothing") // must not panic
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

func TestServeEnv(t *testing.T) {
	got := serveEnv([]string{"PATH=/bin", "PICTOR_PUBLIC_URL=https://x", "HOME=/root", "PICTOR_LOG_LEVEL=debug"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/root" {
		t.Fatalf("serveEnv kept %v", got)
	}
}
