package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestAdminResealRotatesTheMasterKey follows docs/operations.md's master
// key rotation on one machine: the old key moves to master.key.previous,
// a new one takes its place, `pictor admin reseal` (through the running
// server) seals the API keys again under it, and once the old key is
// gone every key still authenticates.
func TestAdminResealRotatesTheMasterKey(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, nil)
	owner := s.Owner
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &owner, JSON: map[string]any{"name": "ci", "permissions": []string{"images:read"}}})
	apitest.WantStatus(t, r, 200)
	var second apitest.Creds
	r.Decode(t, &struct {
		APIID  *string `json:"api_id"`
		APIKey *string `json:"api_key"`
	}{&second.APIID, &second.APIKey})
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	// Steps 1 and 2: the old key becomes previous, a new one current.
	old, err := os.ReadFile(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "master.key.previous"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	next := make([]byte, 32)
	rand.Read(next)
	if err := os.WriteFile(filepath.Join(dir, "master.key"), []byte(hex.EncodeToString(next)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Step 3, through the running server: both keys are sealed again.
	s = startServe(t, dir, nil)
	out, err := runCmd(t, nil, "admin", "reseal", "--data-dir", dir)
	if err != nil {
		t.Fatalf("admin reseal: %v", err)
	}
	var report admin.ResealReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("admin reseal printed %q: %v", out, err)
	}
	if report.APIKeys.Records != 2 || report.APIKeys.Resealed != 2 || !report.Done() || report.CurrentKey == "" {
		t.Fatalf("reseal report %+v: want both API keys sealed again", report)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	// Run again on the stopped server's store: nothing is left to do.
	out, err = runCmd(t, nil, "admin", "reseal", "--data-dir", dir)
	if err != nil {
		t.Fatalf("admin reseal again: %v", err)
	}
	report = admin.ResealReport{}
	if err := json.Unmarshal([]byte(out), &report); err != nil || report.Total().Resealed != 0 || report.APIKeys.Records != 2 {
		t.Fatalf("second reseal %q (%v): want nothing resealed", out, err)
	}

	// Step 4: without the old key, both keys authenticate.
	if err := os.Remove(filepath.Join(dir, "master.key.previous")); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, dir, nil)
	for _, c := range []apitest.Creds{owner, second} {
		apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/images", Creds: &c}), 200)
	}
}
