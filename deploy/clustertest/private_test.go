package clustertest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testSecretsArePrivate: no secret of the cluster (the PostgreSQL password,
// the master key, the edge token, the S3 secret) is on any process's
// command line, which every user reads in /proc, or in a log; and
// Chromium's user (pictor), which renders untrusted pages, can read no
// file of the cluster: not a log, a key, a run file or a master.
func testSecretsArePrivate(t *testing.T, c *cluster) {
	// A master in the bucket, to look for.
	im := c.mustCreate(t, c.Edges[0], newCard("private", 7))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := fetch(ctx, c.Edges[0], im); err != nil {
		t.Fatal(err)
	}

	secrets := c.secrets(t)
	for pid, cmdline := range cmdlines(t) {
		for name, s := range secrets {
			if bytes.Contains(cmdline, []byte(s)) {
				t.Errorf("process %d has the %s on its command line: %q", pid, name, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
			}
		}
	}

	var logs, masters, files []string
	err := filepath.WalkDir(c.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case d.Name() == "log":
			logs = append(logs, path)
		case strings.Contains(path, filepath.Join("s3", "data", "pictor")+string(filepath.Separator)) && strings.Contains(path, im.id):
			masters = append(masters, path)
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) < 5 || len(masters) == 0 {
		t.Fatalf("found %d logs and %d files of image %s under %s: want the processes' logs and its master", len(logs), len(masters), im.id, c.dir)
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the %s", l, name)
			}
		}
	}

	u, err := user.Lookup("pictor")
	if err != nil {
		t.Fatalf("Chromium's user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	readable := 0
	for _, f := range files {
		if strings.HasPrefix(f, filepath.Join(c.dir, "pg")+string(filepath.Separator)) {
			continue // PostgreSQL's own files, its user's (checked: 0700 below)
		}
		cmd := exec.Command("/bin/cat", f)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err == nil {
			readable++
			t.Errorf("Chromium's user can read %s", f)
		} else if !errors.As(err, &ee) || !strings.Contains(stderr.String(), "Permission denied") {
			t.Errorf("cat %s as pictor: %v %s (want Permission denied)", f, err, stderr.String())
		}
	}
	if fi, err := os.Stat(filepath.Join(c.dir, "pg")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("PostgreSQL's directory: %v, %v; want 0700", fi.Mode(), err)
	}
	t.Logf("%d files, %d logs, %d of the master's objects checked: %d readable by pictor", len(files), len(logs), len(masters), readable)
}

// secrets reads what the cluster must keep secret: the store URL's
// password, and each value of the processes' secrets files.
func (c *cluster) secrets(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	su, err := url.Parse(c.Store)
	if err != nil {
		t.Fatal(err)
	}
	if pw, ok := su.User.Password(); !ok || len(pw) < 16 {
		t.Fatalf("the store URL has no password: %s", su.Redacted())
	} else {
		out["PostgreSQL password"] = pw
	}
	for _, name := range []string{"origin-1", "edge-1", "s3"} {
		b, err := os.ReadFile(filepath.Join(c.dir, name, "secrets"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
			if !ok {
				t.Fatalf("%s/secrets: %q", name, line)
			}
			switch k {
			case "PICTOR_MASTER_KEY", "PICTOR_EDGE_TOKEN", "ROOT_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY":
				out[k] = v
			}
		}
	}
	if len(out) != 5 {
		t.Fatalf("secrets found: %d, want 5", len(out))
	}
	return out
}

// cmdlines reads every process's command line.
func cmdlines(t *testing.T) map[int][]byte {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]byte{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			out[pid] = b
		}
	}
	if len(out) < 10 {
		t.Fatalf("read %d command lines", len(out))
	}
	return out
}
