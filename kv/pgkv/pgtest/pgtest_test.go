package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func query(t *testing.T, url, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// TestCluster: a database of its own, reachable with Role's password over
// TCP only, with the durability settings the store relies on, and the same
// URL working again after a restart.
func TestCluster(t *testing.T) {
	c := New(t)
	url := c.Database(t)
	if got := query(t, url, "SELECT current_user"); got != Role {
		t.Fatalf("current_user = %q, want %q", got, Role)
	}
	for setting, want := range map[string]string{
		"fsync":              "on",
		"synchronous_commit": "on",
		"listen_addresses":   "127.0.0.1",
		"server_version_num": "15",
	} {
		got := query(t, url, "SELECT current_setting('"+setting+"')")
		if setting == "server_version_num" {
			got = got[:2]
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	if got := query(t, url, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user"); got != "false" {
		t.Errorf("Role is a superuser")
	}
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, "postgres://"+Role+":wrong@"+c.Addr()+"/postgres?sslmode=disable"); err == nil {
		conn.Close(ctx)
		t.Fatal("connected with a wrong password")
	}
	if other := c.Database(t); other == url {
		t.Fatal("Database returned the same database twice")
	}

	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, url, "SELECT 'back'"); got != "back" {
		t.Fatal(got)
	}
	root := c.root
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("cluster directory left behind: %v", err)
	}
}
