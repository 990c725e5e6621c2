package origin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv/migrate"
	"github.com/pictorhq/pictor/kv/pebblekv"
)

// TestOGPagesMigratedAtStart: a store of the release before OG page
// parameters, opened by this one, has its OG page records given their
// parameters, and its version recorded.
func TestOGPagesMigratedAtStart(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The baseline, as the release before recorded it, and one of its records.
	if _, err := migrate.Apply(t.Context(), db, migrations[:1], "previous", time.Now); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("/a"))
	key := []byte("og-page/cfg/" + hex.EncodeToString(sum[:16]))
	old := `{"config_id":"cfg","path":"/a","revision":1,"checked_at":"2026-03-14T15:00:00Z","fresh_until":"2026-03-14T16:00:00Z",` +
		`"request":{"device_scale":"2","url":"https://site.example/a","viewport_height":630,"viewport_width":1200},"extra":"x","images":{"":"image-a"}}`
	if err := db.Put(key, []byte(old)); err != nil {
		t.Fatal(err)
	}
	if err := migrateStore(db); err != nil {
		t.Fatal(err)
	}
	rec, err := migrate.Read(t.Context(), db)
	if err != nil || rec.Version != len(migrations) {
		t.Fatalf("version %d, %v; want %d", rec.Version, err, len(migrations))
	}
	raw, err := db.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Params  *struct{ RequestedDeviceScale float64 } `json:"params"`
		Request json.RawMessage                         `json:"request"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || got.Params == nil || got.Params.RequestedDeviceScale != 2 {
		t.Fatalf("record after the migrations: %s (%v)", raw, err)
	}
}
