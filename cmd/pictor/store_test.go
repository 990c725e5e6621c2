package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestAdminWithSharedStore: `pictor admin org` works against a PostgreSQL
// store (--store) with the master key from PICTOR_MASTER_KEY; a server on
// the same store authenticates the key it created at once, and a
// suspension made by the command while the server runs refuses it at once.
func TestAdminWithSharedStore(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	env := map[string]string{"PICTOR_MASTER_KEY": strings.Repeat("7e", 32)}
	// The origins' --store and --blobs, passed as they are.
	out, err := runCmd(t, env, "admin", "org", "create", "--store", db, "--blobs", "s3://pictor/masters?region=us-east-1", "--name", "acme", "--plan", "pro")
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		OrgID string `json:"org_id"`
		Key   struct {
			APIID  string `json:"api_id"`
			APIKey string `json:"api_key"`
		} `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.OrgID == "" || created.Key.APIKey == "" {
		t.Fatalf("admin output %q: %v", out, err)
	}
	if strings.Contains(out, pgtest.Role+":") {
		t.Fatal("the command printed the store's credentials")
	}
	// Without the master key the command refuses to run rather than
	// seal secrets with a key no origin has.
	if _, err := runCmd(t, nil, "admin", "org", "create", "--store", db, "--name", "x", "--plan", "pro"); err == nil || !strings.Contains(err.Error(), "PICTOR_MASTER_KEY") {
		t.Fatalf("admin --store without a master key: %v", err)
	}

	s := startServe(t, t.TempDir(), env, "--store", db)
	acme := apitest.Creds{APIID: created.Key.APIID, APIKey: created.Key.APIKey}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &acme}), 200)
	if _, err := runCmd(t, env, "admin", "org", "suspend", "--store", db, "--org", created.OrgID); err != nil {
		t.Fatal(err)
	}
	apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &acme}), 401)
}
