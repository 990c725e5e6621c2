package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/proc"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// fakeScript is a deploy/cluster.sh stand-in: up leaves logs as the real
// one does and records PICTOR_BIN, status names this test's process as
// edge-1 and a gone one as postgres, down records itself. FAKE_RECORD is
// the file it records to, FAKE_UP_FAILS makes up fail after its logs.
const fakeScript = `#!/bin/sh
set -e
cmd=$1
dir=$3
case $cmd in
up)
	mkdir -p "$dir/edge-1" "$dir/pg"
	echo edge-log >"$dir/edge-1/log"
	echo pg-log >"$dir/pg/server.log"
	echo "up PICTOR_BIN=$PICTOR_BIN" >>"$FAKE_RECORD"
	echo "cluster.sh: starting" >&2
	[ -z "$FAKE_UP_FAILS" ] || exit 1
	echo 'a line before the JSON'
	echo '{"edges":["http://127.0.0.1:1","http://127.0.0.1:2"],"origins":["http://127.0.0.1:3"],"store":"postgres://x","api_id":"id","api_key":"key"}'
	;;
status)
	echo "{\"processes\":{\"postgres\":{\"pid\":999999999,\"url\":\"postgres://x\",\"healthy\":true},\"edge-1\":{\"pid\":$FAKE_PID,\"url\":\"http://127.0.0.1:1\",\"healthy\":true}}}"
	;;
down)
	echo down >>"$FAKE_RECORD"
	;;
esac
`

// fakeCheckout writes the fake script as <root>/deploy/cluster.sh and a
// binary as <root>/bin/pictor, and returns both paths.
func fakeCheckout(t *testing.T, script string) (scriptPath, bin string) {
	root := t.TempDir()
	scriptPath, bin = filepath.Join(root, "deploy", "cluster.sh"), filepath.Join(root, "bin", "pictor")
	for _, f := range []struct {
		path, text string
	}{{scriptPath, script}, {bin, "#!/bin/sh\n"}} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return scriptPath, bin
}

func TestUpDown(t *testing.T) {
	script, _ := fakeCheckout(t, fakeScript)
	other := filepath.Join(t.TempDir(), "pictor")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		upFails bool
	}{
		{"up and down", false},
		{"a failed up is brought down", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "record")
			t.Setenv("FAKE_RECORD", record)
			t.Setenv("FAKE_PID", strconv.Itoa(os.Getpid()))
			if tt.upFails {
				t.Setenv("FAKE_UP_FAILS", "1")
			}
			logDir := t.TempDir()
			var log bytes.Buffer
			c, err := Up(context.Background(), script, other, logDir, &log)
			if tt.upFails {
				if !errors.Is(err, ErrUp) {
					t.Fatalf("Up = %v, want ErrUp", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Edges) != 2 || c.Edges[1] != "http://127.0.0.1:2" || c.Origins[0] != "http://127.0.0.1:3" || c.APIID != "id" || c.APIKey != "key" {
					t.Fatalf("Info = %+v", c.Info)
				}
				if len(c.Processes) != 2 || c.Processes[0].Name != "edge-1" || c.Processes[1].Name != "postgres" {
					t.Fatalf("Processes = %+v, want edge-1 and postgres", c.Processes)
				}
				// CPU time is counted in clock ticks: a light process can
				// show none yet. Work until this one shows some.
				for deadline := time.Now().Add(10 * time.Second); proc.TreeCPU(os.Getpid()) == 0 && time.Now().Before(deadline); {
					spin()
				}
				cpu := c.CPU()
				if cpu[PartEdges] <= 0 || cpu[PartPostgres] != 0 {
					t.Fatalf("CPU = %v, want this process's as the edges' and none for a gone postgres", cpu)
				}
				if err := c.Down(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the cluster's directory is still there after Down: %v", err)
				}
			}
			rec, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			if want := "up PICTOR_BIN=" + other + "\ndown\n"; string(rec) != want {
				t.Fatalf("the script ran\n%s\nwant\n%s", rec, want)
			}
			if !strings.Contains(log.String(), "cluster.sh: starting") {
				t.Fatalf("up's progress is not in the log: %q", log.String())
			}
			for name, want := range map[string]string{"cluster-edge-1.log": "edge-log\n", "cluster-postgres.log": "pg-log\n"} {
				if b, err := os.ReadFile(filepath.Join(logDir, name)); err != nil || string(b) != want {
					t.Errorf("%s = %q, %v; want %q", name, b, err, want)
				}
			}
		})
	}
}

func TestCheckBinary(t *testing.T) {
	old := strings.ReplaceAll(fakeScript, "PICTOR_BIN", "BIN")
	script, own := fakeCheckout(t, old)
	other := filepath.Join(t.TempDir(), "pictor")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkBinary(script, own); err != nil {
		t.Fatalf("the checkout's own binary: %v", err)
	}
	if err := checkBinary(script, other); !errors.Is(err, ErrOtherBinary) {
		t.Fatalf("another binary = %v, want ErrOtherBinary", err)
	}
	withBin, _ := fakeCheckout(t, fakeScript)
	if err := checkBinary(withBin, other); err != nil {
		t.Fatalf("a script with PICTOR_BIN: %v", err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, up, status, wantErr string
	}{
		{name: "good",
			up:     "progress\n" + `{"edges":["http://e1"],"origins":["http://o1"],"store":"postgres://s","api_id":"i","api_key":"k"}` + "\n",
			status: `{"processes":{"s3":{"pid":3,"url":"http://s3","healthy":true},"edge-1":{"pid":1,"url":"http://e1","healthy":true}}}`},
		{name: "not JSON", up: "cluster.sh: up failed\n", wantErr: "last line"},
		{name: "no credentials", up: `{"edges":["http://e1"],"origins":["http://o1"],"store":"postgres://s"}`, wantErr: "no credentials"},
		{name: "no edges", up: `{"edges":[],"origins":["http://o1"],"api_id":"i","api_key":"k"}`, wantErr: "no edges"},
		{name: "unhealthy",
			up:      `{"edges":["http://e1"],"origins":["http://o1"],"api_id":"i","api_key":"k"}`,
			status:  `{"processes":{"edge-1":{"pid":1,"url":"http://e1","healthy":false}}}`,
			wantErr: "edge-1 (pid 1) is not healthy"},
		{name: "no process", up: `{"edges":["http://e1"],"origins":["http://o1"],"api_id":"i","api_key":"k"}`,
			status: `{"processes":{}}`, wantErr: "no process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := parseUp([]byte(tt.up))
			if err == nil {
				var ps []Process
				ps, err = parseStatus([]byte(tt.status))
				if err == nil && (len(ps) != 2 || ps[0] != (Process{"edge-1", 1, "http://e1"}) || partOf(ps[1].Name) != PartS3) {
					t.Fatalf("parseStatus = %+v", ps)
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || info.Store != "postgres://s" || info.APIKey != "k" {
				t.Fatalf("parseUp = %+v, %v", info, err)
			}
		})
	}
}

// TestTransactions reads the counter of a real PostgreSQL: each read's
// own connection is a transaction, counted once its backend exits.
func TestTransactions(t *testing.T) {
	c := &Cluster{Info: Info{Store: pgtest.Shared(t).Database(t)}}
	ctx := context.Background()
	first, err := c.Transactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := c.Transactions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n > first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the count stayed at %d for a minute of reads", first)
		}
	}
	bad := &Cluster{Info: Info{Store: "postgres://nobody:wrong@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}}
	if _, err := bad.Transactions(ctx); err == nil || !strings.Contains(err.Error(), "pg_stat_database") {
		t.Fatalf("Transactions of an unreachable server = %v", err)
	}
}

// spin uses the CPU for a moment.
func spin() {
	h := sha256.New()
	buf := make([]byte, 1<<16)
	for range 64 {
		h.Write(buf)
	}
	_ = h.Sum(nil)
}
