package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/images"
	"github.com/pictorhq/pictor/origin/rendition"
)

// orgView is an organization as `admin org list` and `set-plan` print it.
type orgView struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Plan         string `json:"plan"`
	Suspended    bool   `json:"suspended"`
	CreatedAt    string `json:"created_at"`
	Keys         int    `json:"keys"`
	EnabledKeys  int    `json:"enabled_keys"`
	CreditsLimit int64  `json:"credits_limit"`
}

// keyView is what `admin key create` prints.
type keyView struct {
	OrgID     string `json:"org_id"`
	ID        string `json:"id"`
	APIID     string `json:"api_id"`
	APIKey    string `json:"api_key"`
	AllFuture bool   `json:"all_future_permissions"`
}

func (k keyView) creds() apitest.Creds { return apitest.Creds{APIID: k.APIID, APIKey: k.APIKey} }

// adminList runs `admin org list` and returns its output and organizations.
func adminList(t *testing.T, dir string) (string, []orgView) {
	t.Helper()
	out, err := runCmd(t, nil, "admin", "org", "list", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []orgView `json:"data"`
	}
	decodeJSON(t, out, &list)
	return out, list.Data
}

func findOrg(t *testing.T, orgs []orgView, name string) orgView {
	t.Helper()
	for _, o := range orgs {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no organization %q in %+v", name, orgs)
	return orgView{}
}

// adminKey runs `admin key create` for the organization.
func adminKey(t *testing.T, dir, orgID string) keyView {
	t.Helper()
	out, err := runCmd(t, nil, "admin", "key", "create", "--data-dir", dir, "--org", orgID)
	if err != nil {
		t.Fatal(err)
	}
	var k keyView
	decodeJSON(t, out, &k)
	if k.OrgID != orgID || k.APIID == "" || k.APIKey == "" || !k.AllFuture {
		t.Fatalf("admin key create printed %s", out)
	}
	return k
}

// TestAdminOrgListSetPlanKeyCreate: list, set-plan and key create, on the
// store directly (no server) and through the admin endpoint of a server
// running in its own process (whose log is its own); what they change
// shows in the API at once.
func TestAdminOrgListSetPlanKeyCreate(t *testing.T) {
	for _, running := range []bool{false, true} {
		name := map[bool]string{false: "server stopped", true: "server running"}[running]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			acme := orgCreate(t, dir, "acme", "free")
			orgCreate(t, dir, "globex", "scale")
			var proc *process
			var api string
			if running {
				proc, api = startProcess(t, "origin", "--data-dir", dir, "--addr", "127.0.0.1:0")
				apitest.WantMessage(t, apitest.WantError(t, apitest.Do(t, api, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: &acme}), 403), "free plan")
			}

			raw, orgs := adminList(t, dir)
			if len(orgs) != 2 || orgs[0].Name != "acme" || orgs[1].Name != "globex" {
				t.Fatalf("list: %s", raw)
			}
			a := orgs[0]
			if a.ID == "" || a.Plan != "free" || a.Suspended || a.Keys != 1 || a.EnabledKeys != 1 || a.CreditsLimit != 50 {
				t.Fatalf("acme listed as %+v", a)
			}
			if _, err := time.Parse(time.RFC3339, a.CreatedAt); err != nil {
				t.Fatalf("created_at %q: %v", a.CreatedAt, err)
			}
			if strings.Contains(raw, acme.APIKey) || strings.Contains(raw, "secret") {
				t.Fatalf("list shows a secret: %s", raw)
			}

			out, err := runCmd(t, nil, "admin", "org", "set-plan", "--data-dir", dir, "--org", a.ID, "--plan", "pro")
			if err != nil {
				t.Fatal(err)
			}
			var v orgView
			decodeJSON(t, out, &v)
			if v.ID != a.ID || v.Plan != "pro" || v.CreditsLimit != 10000 || v.Keys != 1 {
				t.Fatalf("set-plan printed %s", out)
			}
			k := adminKey(t, dir, a.ID)

			bad := []struct {
				name string
				args []string
				want string
			}{
				{"unknown plan", []string{"org", "set-plan", "--org", a.ID, "--plan", "platinum"}, "unknown plan"},
				{"unknown organization", []string{"org", "set-plan", "--org", "01a20000-0000-7000-8000-000000000000", "--plan", "pro"}, "not found"},
				{"set-plan without a plan", []string{"org", "set-plan", "--org", a.ID}, "--plan"},
				{"set-plan without an organization", []string{"org", "set-plan", "--plan", "pro"}, "--org"},
				{"key of an unknown organization", []string{"key", "create", "--org", "01a20000-0000-7000-8000-000000000000"}, "not found"},
				{"key without an organization", []string{"key", "create"}, "--org"},
				{"unknown key command", []string{"key", "rotate", "--org", a.ID}, "admin key create"},
			}
			for _, tc := range bad {
				t.Run(tc.name, func(t *testing.T) {
					out, err := runCmd(t, nil, append(append([]string{"admin"}, tc.args...), "--data-dir", dir)...)
					if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
						t.Fatalf("err = %v (stdout %q), want it to mention %q", err, out, tc.want)
					}
				})
			}
			if _, orgs := adminList(t, dir); findOrg(t, orgs, "acme").Plan != "pro" {
				t.Fatal("a refused set-plan changed the plan")
			}

			if !running {
				proc, api = startProcess(t, "origin", "--data-dir", dir, "--addr", "127.0.0.1:0")
			}
			apitest.WantStatus(t, apitest.Do(t, api, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: &acme}), 200)
			newKey := k.creds()
			r := apitest.Do(t, api, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &newKey})
			apitest.WantStatus(t, r, 200)
			var keys struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			r.Decode(t, &keys)
			if len(keys.Data) != 2 {
				t.Fatalf("acme holds %d keys, want 2", len(keys.Data))
			}
			if _, orgs := adminList(t, dir); findOrg(t, orgs, "acme").Keys != 2 {
				t.Fatalf("list after key create: %+v", orgs)
			}
			if err := proc.terminate(t); err != nil {
				t.Fatalf("origin exit: %v", err)
			}
			logs := proc.stderr.String()
			if strings.Contains(logs, k.APIKey) || strings.Contains(logs, acme.APIKey) {
				t.Fatal("a secret is in the server's log")
			}
			if running && (!strings.Contains(logs, `"command":"key.create"`) || !strings.Contains(logs, `"api_id":"`+k.APIID+`"`) ||
				!strings.Contains(logs, `"command":"org.set_plan"`)) {
				t.Fatalf("the server's log lacks the commands:\n%s", logs)
			}
		})
	}
}

// TestAdminLostFirstKey: the default organization's key, printed once by
// serve, is lost; the operator finds the organization and makes a new
// owner key, which holds every permission (it disables the lost key).
func TestAdminLostFirstKey(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, nil)
	lost := s.Owner
	_, orgs := adminList(t, dir)
	def := findOrg(t, orgs, "default")
	if def.ID != s.OrgID || def.Plan != "scale" {
		t.Fatalf("default organization listed as %+v, serve printed %s", def, s.OrgID)
	}
	k := adminKey(t, dir, def.ID)
	owner := k.creds()
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &owner})
	apitest.WantStatus(t, r, 200)
	var keys struct {
		Data []struct {
			ID    string `json:"id"`
			APIID string `json:"api_id"`
		} `json:"data"`
	}
	r.Decode(t, &keys)
	lostID := ""
	for _, key := range keys.Data {
		if key.APIID == lost.APIID {
			lostID = key.ID
		}
	}
	if lostID == "" {
		t.Fatalf("the first key is not listed: %+v", keys.Data)
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + lostID, Creds: &owner}), 204)
	apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &lost}), 401)

	// Lost again, server stopped: the same way back in.
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	again := adminKey(t, dir, def.ID).creds()
	s = startServe(t, dir, nil)
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &again,
		JSON: map[string]any{"permissions": []string{"images:create"}}}), 200)
}

// blueTemplate creates a template whose signed URL renders a w×40 blue box.
func blueTemplate(t *testing.T, s *server) string {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &s.Owner,
		JSON: map[string]any{"html": `<div style="width:{{w}}px;height:40px;background:rgb(0,0,255)"></div>`, "device_scale": 1}})
	apitest.WantStatus(t, r, 201)
	var tpl struct {
		ID string `json:"template_id"`
	}
	r.Decode(t, &tpl)
	return tpl.ID
}

// imageBytes GETs an image's URL and returns its bytes.
func imageBytes(t *testing.T, base, path string) []byte {
	t.Helper()
	r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: path})
	apitest.WantStatus(t, r, 200)
	return r.Body
}

// checkRestoredImages opens the restored store and checks that every file
// an image's record names is in the restored files store.
func checkRestoredImages(t *testing.T, dir string) int {
	t.Helper()
	store, err := pebblekv.Open(filepath.Join(dir, "kv"), pebblekv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files, err := blob.Open(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	it := store.Iterate(t.Context(), []byte("img/"), kv.IterOptions{})
	defer it.Close()
	n := 0
	for it.Next() {
		var img rendition.Image
		if err := json.Unmarshal(it.Value(), &img); err != nil {
			t.Fatal(err)
		}
		for format, rend := range img.Renditions {
			name, _ := rendition.FileName(format)
			data, err := files.Read(context.Background(), img.ID, name)
			if err != nil {
				t.Fatalf("image %s: its %s is not restored: %v", img.ID, format, err)
			}
			// A PNG master may be re-compressed (same pixels) between its
			// write and its record's.
			if format != "png" && int64(len(data)) != rend.Size {
				t.Fatalf("image %s: %s restored with %d bytes, its record says %d", img.ID, format, len(data), rend.Size)
			}
			n++
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkModes checks that dir is 0700 and holds only 0700 directories and
// 0600 files.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Type()&fs.ModeSymlink != 0 || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

type backupOut struct {
	Path      string `json:"path"`
	Files     int    `json:"files"`
	Images    int    `json:"images"`
	Bytes     int64  `json:"bytes"`
	MasterKey bool   `json:"master_key"`
}

// TestAdminBackupRestore: a backup taken while serve runs and images are
// being made and deleted restores into a new directory where serve
// answers the same keys, image bytes and template renders; every image
// the restored store names has its files.
func TestAdminBackupRestore(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, nil)
	acme := orgCreate(t, dir, "acme", "pro") // through the admin endpoint
	tplID := blueTemplate(t, s)
	const values = "w=60"
	signed := fmt.Sprintf("/v1/image/%s/%s?%s", tplID, images.Sign(s.Owner.APIKey, values), values)

	// Two images whose bytes must come back (JPEG: a master's compaction
	// would change PNG bytes meanwhile).
	var paths []string
	var want [][]byte
	for _, c := range []string{"rgb(255,0,0)", "rgb(0,128,0)"} {
		_, p := createImage(t, s.URL, s.Owner, map[string]any{"html": `<div style="width:300px;height:100px;background:` + c + `"></div>`, "format": "jpg"})
		paths = append(paths, p)
		want = append(want, imageBytes(t, s.OriginURL, p))
	}

	// Meanwhile another client makes images and deletes every second one,
	// until the backup is over (at most 40).
	stop := make(chan struct{})
	first := make(chan struct{}) // closed once it made two images, or gave up
	var once sync.Once
	var wg sync.WaitGroup
	var churnErr error
	var made atomic.Int64 // images the client made, deleted ones included
	wg.Go(func() {
		defer once.Do(func() { close(first) })
		send := func(r apitest.Request, status int) (*apitest.Response, bool) {
			resp, err := apitest.Send(s.OriginURL, r)
			if err == nil && resp.Status != status {
				err = fmt.Errorf("%s %s: %d %s", r.Method, r.Path, resp.Status, resp.Body)
			}
			churnErr = err
			return resp, err == nil
		}
		for i := range 40 {
			select {
			case <-stop:
				return
			default:
			}
			html := fmt.Sprintf(`<div style="width:%dpx;height:50px;background:rgb(0,0,%d)"></div>`, 100+i, 5*i)
			r, ok := send(apitest.Request{Method: "POST", Path: "/v1/image", Creds: &acme, JSON: map[string]any{"html": html}}, 200)
			if !ok {
				return
			}
			made.Add(1)
			var img struct{ ID string }
			json.Unmarshal(r.Body, &img)
			if _, ok := send(apitest.Request{Method: "GET", Path: "/v1/image/" + img.ID}, 200); !ok {
				return
			}
			if i%2 == 1 {
				if _, ok := send(apitest.Request{Method: "DELETE", Path: "/v1/image/" + img.ID, Creds: &acme}, 202); !ok {
					return
				}
				once.Do(func() { close(first) })
			}
		}
	})
	<-first

	outDir := t.TempDir()
	archive := filepath.Join(outDir, "pictor.backup")
	madeBefore := made.Load()
	out, err := runCmd(t, nil, "admin", "backup", "--data-dir", dir, "--out", archive)
	t.Logf("the concurrent client made %d images before the backup, %d while it ran", madeBefore, made.Load()-madeBefore)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if churnErr != nil {
		t.Fatal(churnErr)
	}
	var summary backupOut
	decodeJSON(t, out, &summary)
	fi, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || summary.Path != archive || summary.Bytes != fi.Size() || !summary.MasterKey || summary.Images < 2 {
		t.Fatalf("backup printed %s; the archive has mode %v, %d bytes", out, fi.Mode().Perm(), fi.Size())
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 1 {
		t.Fatalf("the backup left %v beside the archive", entries)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".backup-*")); len(left) != 0 {
		t.Fatalf("the backup left %v in the data directory", left)
	}
	f, _ := os.Open(archive)
	m, err := admin.Verify(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, file := range m.Files {
		names[file.Name] = true
		if top := strings.Split(file.Name, "/")[0]; top != "kv" && top != "images" && top != "master.key" && top != "edge.token" && top != "oauth-signing-key.pem" {
			t.Errorf("the archive holds %s", file.Name)
		}
	}
	if !names["master.key"] || !names["edge.token"] || !names["oauth-signing-key.pem"] {
		t.Fatalf("the archive lacks a secret: %v", names)
	}

	// Restore into a new directory.
	restored := filepath.Join(t.TempDir(), "restored")
	out, err = runCmd(t, nil, "admin", "restore", "--data-dir", restored, "--from", archive)
	if err != nil {
		t.Fatal(err)
	}
	var rsum backupOut
	decodeJSON(t, out, &rsum)
	if rsum.Files != len(m.Files) || rsum.Images != m.Images || rsum.Path != restored {
		t.Fatalf("restore printed %s, the archive holds %d files", out, len(m.Files))
	}
	checkModes(t, restored)
	if n := checkRestoredImages(t, restored); n < 2 {
		t.Fatalf("the restored store names %d image files", n)
	}
	_, before := adminList(t, dir)
	_, after := adminList(t, restored)
	for _, o := range before {
		if r := findOrg(t, after, o.Name); r.ID != o.ID || r.Plan != o.Plan {
			t.Fatalf("organization %s restored as %+v, was %+v", o.Name, r, o)
		}
	}

	s2 := startServe(t, restored, nil)
	if s2.Owner.APIKey != "" {
		t.Fatal("serve made a default organization in the restored directory")
	}
	for _, c := range []apitest.Creds{s.Owner, acme} {
		apitest.WantStatus(t, s2.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &c}), 200)
	}
	for i, p := range paths {
		if got := imageBytes(t, s2.OriginURL, p); !bytes.Equal(got, want[i]) {
			t.Fatalf("%s: the restored server answers %d other bytes (had %d)", p, len(got), len(want[i]))
		}
	}
	img := apitest.DecodeImage(t, s2.do(t, apitest.Request{Method: "GET", Path: signed}))
	apitest.WantSize(t, img, 60, 40)
	apitest.WantPixel(t, img, 30, 20, color.NRGBA{0, 0, 255, 255}, 10)

	// Restore refuses a directory that holds anything: the running
	// server's, or one with a file of the operator's.
	mine := t.TempDir()
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine"), 0o600)
	for _, target := range []string{dir, mine} {
		before, _ := os.ReadDir(target)
		_, err := runCmd(t, nil, "admin", "restore", "--data-dir", target, "--from", archive)
		if err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("restore into %s = %v", target, err)
		}
		if after, _ := os.ReadDir(target); len(after) != len(before) {
			t.Fatalf("a refused restore changed %s", target)
		}
	}
}

// TestAdminBackupServerStopped: without a server the command reads the
// store itself; the restored directory serves the same keys and images.
func TestAdminBackupServerStopped(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, nil)
	owner := s.Owner
	_, p := createImage(t, s.URL, owner, map[string]any{"html": box800, "format": "jpg"})
	want := imageBytes(t, s.OriginURL, p)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "b")
	if _, err := runCmd(t, nil, "admin", "backup", "--data-dir", dir, "--out", archive); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "r")
	if err := os.Mkdir(restored, 0o755); err != nil { // empty: accepted
		t.Fatal(err)
	}
	if _, err := runCmd(t, nil, "admin", "restore", "--data-dir", restored, "--from", archive); err != nil {
		t.Fatal(err)
	}
	checkModes(t, restored)
	s2 := startServe(t, restored, nil)
	apitest.WantStatus(t, s2.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &owner}), 200)
	if got := imageBytes(t, s2.OriginURL, p); !bytes.Equal(got, want) {
		t.Fatal("the restored image has other bytes")
	}
}

// TestAdminBackupRefusals: what backup and restore refuse, with a clear
// error and nothing written.
func TestAdminBackupRefusals(t *testing.T) {
	dir := t.TempDir()
	orgCreate(t, dir, "acme", "pro")
	good := filepath.Join(t.TempDir(), "good")
	if _, err := runCmd(t, nil, "admin", "backup", "--data-dir", dir, "--out", good); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 0x55

	var evil bytes.Buffer
	gz := gzip.NewWriter(&evil)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "../escaped", Size: 4, Mode: 0o644})
	tw.Write([]byte("evil"))
	tw.Close()
	gz.Close()
	var link bytes.Buffer
	gz = gzip.NewWriter(&link)
	tw = tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "master.key", Linkname: "/etc/shadow"})
	tw.Close()
	gz.Close()

	archives := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", raw[:len(raw)*2/3], "truncated or corrupted"},
		{"corrupted", flipped, "invalid backup archive"},
		{"path traversal", evil.Bytes(), "outside"},
		{"symlink", link.Bytes(), "not a regular file"},
	}
	for _, tc := range archives {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			from := filepath.Join(t.TempDir(), "archive")
			os.WriteFile(from, tc.data, 0o600)
			target := filepath.Join(parent, "sub", "data")
			out, err := runCmd(t, nil, "admin", "restore", "--data-dir", target, "--from", from)
			if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
				t.Fatalf("restore = %v (stdout %q), want an error mentioning %q", err, out, tc.want)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Fatalf("a refused restore wrote %v", entries)
			}
			for _, p := range []string{filepath.Join(parent, "escaped"), filepath.Join(parent, "sub", "escaped")} {
				if _, err := os.Stat(p); err == nil {
					t.Fatalf("the archive wrote %s", p)
				}
			}
		})
	}

	outDir := t.TempDir()
	refusals := []struct {
		name string
		args []string
		want string
	}{
		{"backup with --store", []string{"backup", "--data-dir", dir, "--out", filepath.Join(outDir, "x"), "--store", "postgres://u:p@127.0.0.1:1/db"}, "back up the PostgreSQL database, the bucket and the master key together"},
		{"backup with S3 blobs", []string{"backup", "--data-dir", dir, "--out", filepath.Join(outDir, "x"), "--blobs", "s3://bucket/p"}, "back up the PostgreSQL database, the bucket and the master key together"},
		{"restore with --store", []string{"restore", "--data-dir", filepath.Join(outDir, "r"), "--from", good, "--store", "postgres://u:p@127.0.0.1:1/db"}, "PostgreSQL"},
		{"backup of a directory without a store", []string{"backup", "--data-dir", t.TempDir(), "--out", filepath.Join(outDir, "x")}, "no embedded store"},
		{"backup without --out", []string{"backup", "--data-dir", dir}, "--out"},
		{"restore without --from", []string{"restore", "--data-dir", filepath.Join(outDir, "r")}, "--from"},
		{"restore of a missing file", []string{"restore", "--data-dir", filepath.Join(outDir, "r"), "--from", filepath.Join(outDir, "none")}, "no such file"},
		{"unknown admin command", []string{"explode"}, "explode"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCmd(t, nil, append([]string{"admin"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
				t.Fatalf("a refused command wrote %v", entries)
			}
		})
	}
}
