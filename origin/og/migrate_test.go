package og

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"
)

// previousPage is the page record as the release before Params writes and
// reads it: the records of this release must stay readable by it.
type previousPage struct {
	ConfigID     string            `json:"config_id"`
	Path         string            `json:"path"`
	Revision     int64             `json:"revision"`
	Generation   int64             `json:"generation,omitempty"`
	CheckedAt    time.Time         `json:"checked_at"`
	FreshUntil   time.Time         `json:"fresh_until"`
	ETag         string            `json:"etag,omitempty"`
	LastModified string            `json:"last_modified,omitempty"`
	Request      json.RawMessage   `json:"request"`
	Extra        string            `json:"extra"`
	Images       map[string]string `json:"images"`
}

// TestMigratePages: OG page records written by the release before Params,
// on each backend, get their Params from their request, keep every other
// field byte for byte (the release before still reads them), and stay as
// they are when their request breaks a rule. The step runs from two
// origins at once and again afterwards: the records come out the same.
func TestMigratePages(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	old := []previousPage{
		{ConfigID: "cfg", Path: "/a", Revision: 3, Generation: 2, CheckedAt: t0, FreshUntil: t0.Add(time.Hour), ETag: `"e1"`,
			LastModified: "Sat, 14 Mar 2026 14:00:00 GMT", Extra: "og\x00cfg\x003\x000\x000",
			Request: json.RawMessage(`{"device_scale":"1.5","headers":{"x-site":"a"},"max_wait_ms":"9000","url":"https://site.example/a","viewport_height":630,"viewport_width":1200}`),
			Images:  map[string]string{"": "image-a"}},
		{ConfigID: "cfg", Path: "/b", Revision: 3, CheckedAt: t0, FreshUntil: t0.Add(time.Hour), Extra: "og\x00cfg\x003\x000\x002",
			Request: json.RawMessage(`{"css":"h1{color:red}","device_scale":1,"html":"<h1>B</h1>","viewport_height":630,"viewport_width":1200}`),
			Images:  map[string]string{"twitter": "image-b-t", "facebook": "image-b-f"}},
		{ConfigID: "other", Path: "/c", Revision: 1, CheckedAt: t0, FreshUntil: t0, Extra: "x",
			Request: json.RawMessage(`{"url":"https://site.example/c","viewport_width":99999}`), // breaks a rule
			Images:  map[string]string{}},
	}
	if requestParams(old[2].Request) != nil || requestParams(old[0].Request) == nil || requestParams(old[1].Request) == nil {
		t.Fatal("the records' requests are not the valid and invalid ones this test needs")
	}
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			dbs := tc.Pair(t)
			written := map[string][]byte{}
			for _, p := range old {
				raw, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				key := pageKey(p.ConfigID, p.Path)
				if err := dbs[0].Put(key, raw); err != nil {
					t.Fatal(err)
				}
				written[string(key)] = raw
			}
			var wg sync.WaitGroup
			errs := make(chan error, len(dbs))
			for _, db := range dbs {
				wg.Go(func() { errs <- MigratePages(context.Background(), db) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("migrate: %v", err)
				}
			}
			migrated := map[string][]byte{}
			for _, p := range old {
				key := pageKey(p.ConfigID, p.Path)
				raw, err := dbs[1].Get(t.Context(), key)
				if err != nil {
					t.Fatal(err)
				}
				migrated[string(key)] = raw
				var before, after previousPage
				if err := json.Unmarshal(written[string(key)], &before); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(raw, &after); err != nil {
					t.Fatalf("%s: the release before cannot read the record: %v", p.Path, err)
				}
				if !reflect.DeepEqual(after, before) {
					t.Fatalf("%s: the release before reads\n%+v\nwant\n%+v", p.Path, after, before)
				}
				want := requestParams(p.Request)
				if want == nil { // breaks a rule: left as written
					if !bytes.Equal(raw, written[string(key)]) {
						t.Fatalf("%s: a request that breaks a rule was rewritten: %s", p.Path, raw)
					}
					continue
				}
				var stored struct {
					Params json.RawMessage `json:"params"`
				}
				if err := json.Unmarshal(raw, &stored); err != nil || len(stored.Params) == 0 {
					t.Fatalf("%s: no params in the migrated record %s", p.Path, raw)
				}
				pg, err := loadPage(t.Context(), dbs[1], p.ConfigID, p.Path)
				if err != nil || pg == nil || pg.Params == nil {
					t.Fatalf("%s: load: %+v, %v", p.Path, pg, err)
				}
				if !reflect.DeepEqual(pg.Params, want) || !bytes.Equal(pg.Params.Canonical(), want.Canonical()) {
					t.Fatalf("%s: params %+v, want %+v", p.Path, pg.Params, want)
				}
			}
			// Again: nothing changes.
			if err := MigratePages(context.Background(), dbs[0]); err != nil {
				t.Fatal(err)
			}
			for key, raw := range migrated {
				again, err := dbs[1].Get(t.Context(), []byte(key))
				if err != nil || !bytes.Equal(again, raw) {
					t.Fatalf("%s changed when migrated again: %s, %v; was %s", key, again, err, raw)
				}
			}
		})
	}
}

// TestPageRecordFormat: a record of this release keeps its request as the
// release before reads it, and its Params under the parameters' field
// names: a rename in imageparams that would lose a stored field fails
// here.
func TestPageRecordFormat(t *testing.T) {
	request := json.RawMessage(`{"device_scale":"2","max_wait_ms":5000,"ms_delay":250,"url":"https://site.example/a","viewport_height":630,"viewport_width":1200,"headers":{"X-Site":"a"},"disable_twemoji":false}`)
	pg := &page{ConfigID: "cfg", Path: "/a", Revision: 1, Request: request, Params: requestParams(request), Extra: "x",
		Images: map[string]string{"": "image-a"}}
	if pg.Params == nil {
		t.Fatal("the request does not parse")
	}
	raw, err := json.Marshal(pg)
	if err != nil {
		t.Fatal(err)
	}
	var before previousPage
	if err := json.Unmarshal(raw, &before); err != nil || !bytes.Equal(before.Request, request) || before.Images[""] != "image-a" {
		t.Fatalf("the release before reads %+v, %v", before, err)
	}
	var fields struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"URL": `"https://site.example/a"`, "RequestedDeviceScale": `2`, "MaxWait": `5000000000`, "Delay": `250000000`,
		"Viewport": `{"Width":1200,"Height":630}`, "Headers": `{"X-Site":"a"}`, "DisableTwemoji": `false`,
	} {
		if got := string(fields.Params[name]); got != want {
			t.Errorf("params.%s = %s, want %s", name, got, want)
		}
	}
	got, err := decodePage(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Params, pg.Params) {
		t.Fatalf("params read back %+v, want %+v", got.Params, pg.Params)
	}
}
