package origin_test

import (
	"bytes"
	"image/color"
	"image/png"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// storeResult is the answer of PUT /v1/store (spec §2.7).
type storeResult struct {
	Outcome              string
	BaseResult           storeObject
	TransformationResult *storeObject
	Success              bool
	StatusCode           int
	Error                string
	ReferenceID          string
}

type storeObject struct{ Status, Target, Bucket, Key string }

// createDestination creates an other_s3_compatible destination on s3's
// bucket under prefix and returns its id.
func (o *testOrigin) createDestination(t *testing.T, s3 *s3test.Server, prefix string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"name": "bucket " + prefix, "connection_info": map[string]any{"provider": "other_s3_compatible",
		"endpoint": s3.URL, "bucket": s3.Bucket, "key_prefix": prefix,
		"access_key_id": s3test.AccessKeyID, "secret_access_key": s3test.SecretAccessKey}}
	for k, v := range extra {
		body[k] = v
	}
	o.nextWindow()
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/storage-destinations", Creds: &o.Owner, JSON: body})
	apitest.WantStatus(t, r, 200)
	var d struct{ ID string }
	r.Decode(t, &d)
	return d.ID
}

func (o *testOrigin) store(t *testing.T, creds apitest.Creds, path string) (*apitest.Response, storeResult) {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "PUT", Path: path, Creds: &creds})
	var res storeResult
	if r.Status == 200 || r.Status == 424 {
		r.Decode(t, &res)
	}
	return r, res
}

// waitStored waits until the origin says the background write of image id
// ended, and fails the test if it failed.
func waitStored(t *testing.T, written <-chan storedEvent, id string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case e := <-written:
			if e.id != id {
				continue
			}
			if e.err != nil {
				t.Fatalf("background write of %s: %v", id, e.err)
			}
			return
		case <-deadline:
			t.Fatalf("the background write of %s never ended", id)
		}
	}
}

type storedEvent struct {
	id  string
	err error
}

// TestStoreDestination renders images with a storage_destination_id against
// a real S3-compatible server (versitygw): the master goes to the bucket in
// the background and equals what GET serves; PUT /v1/store answers the
// store result (complete, already_stored on repeats, a format as its
// transformation); a destination with hcti_storage_disabled gives a
// /v1/store URL, no public GET and no files kept; a stopped server is a
// 424 failed with its reference id; ids that are not the caller's are 404.
func TestStoreDestination(t *testing.T) {
	s3 := s3test.New(t)
	// The compactor re-encodes masters later (same pixels, other bytes):
	// off, so the bucket's bytes and GET's are comparable.
	written := make(chan storedEvent, 64)
	o := startOrigin(t, func(c *origin.Config) {
		c.CompactIdle = -1
		c.StorageWritten = func(id string, err error) { written <- storedEvent{id, err} }
	})
	dest := o.createDestination(t, s3, "renders", nil)
	only := o.createDestination(t, s3, "only", map[string]any{"hcti_storage_disabled": true})
	off := o.createDestination(t, s3, "off", map[string]any{"disabled": true})
	small := map[string]any{"html": redBox, "viewport_width": 100, "viewport_height": 50, "device_scale": 1}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range small {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}

	t.Run("creation checks", func(t *testing.T) {
		_, basic := o.newOrg(t.Context(), t, "basic")
		for _, tc := range []struct {
			name   string
			creds  apitest.Creds
			id     string
			status int
			want   string
		}{
			{"plan without delivery", basic, dest, 403, "pro plan"},
			{"unknown", o.Owner, "0196f0c2-0000-7000-8000-000000000000", 404, "not found"},
			{"disabled", o.Owner, off, 400, "disabled"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &tc.creds, JSON: with("storage_destination_id", tc.id)})
				apitest.WantMessage(t, apitest.WantError(t, r, tc.status), tc.want)
				if tc.status == 400 {
					apitest.WantField(t, r, "storage_destination_id")
				}
			})
		}
	})

	t.Run("batch and template", func(t *testing.T) {
		r := o.batch(t, o.Owner, map[string]any{"variations": []any{with("storage_destination_id", off)}})
		apitest.WantField(t, r, "variations[0].storage_destination_id")
		r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner,
			JSON: map[string]any{"html": redBox, "name": "to the bucket", "storage_destination_id": only}})
		apitest.WantStatus(t, r, 201)
		var tpl struct {
			ID string `json:"template_id"`
		}
		r.Decode(t, &tpl)
		r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + tpl.ID, Creds: &o.Owner, JSON: map[string]any{"template_values": map[string]any{}}})
		apitest.WantStatus(t, r, 200)
		var c struct{ URL, ID string }
		r.Decode(t, &c)
		if c.URL != o.URL+"/v1/store/"+c.ID {
			t.Fatalf("template default storage_destination_id: create answered %s", r.Body)
		}
	})

	id, u := o.create(t, o.Owner, with("storage_destination_id", dest))
	key := "renders/" + id + ".png"
	waitStored(t, written, id)
	if !slices.Contains(s3.Keys(t, s3.Bucket, key), key) {
		t.Fatalf("%s is not in the bucket after its write", key)
	}
	obj := s3.Get(t, s3.Bucket, key)
	served := o.get(t, u)
	apitest.WantStatus(t, served, 200)
	if !bytes.Equal(obj.Body, served.Body) || obj.ContentType != "image/png" {
		t.Fatalf("bucket holds %d bytes (%s), GET serves %d", len(obj.Body), obj.ContentType, len(served.Body))
	}

	metrics := string(o.get(t, "/metrics").Body)
	for _, want := range []string{"\npictor_storage_write_queue 0\n", "\npictor_storage_writes_dropped_total 0\n",
		`pictor_storage_writes_total{provider="other_s3_compatible",result="ok"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q after one background write", want)
		}
	}

	t.Run("store again", func(t *testing.T) {
		r, res := o.store(t, o.Owner, "/v1/store/"+id)
		apitest.WantStatus(t, r, 200)
		if res.Outcome != "complete" || !res.Success || res.BaseResult.Status != "already_stored" || res.BaseResult.Key != key ||
			res.BaseResult.Bucket != s3.Bucket || res.BaseResult.Target != "storage_destination" || res.TransformationResult != nil {
			t.Fatalf("store: %s", r.Body)
		}
		for _, status := range []string{"stored", "already_stored"} {
			r, res = o.store(t, o.Owner, "/v1/store/"+id+".webp")
			apitest.WantStatus(t, r, 200)
			if tr := res.TransformationResult; res.Outcome != "complete" || tr == nil || tr.Status != status || tr.Key != "renders/"+id+".webp" {
				t.Fatalf("store .webp, want %s: %s", status, r.Body)
			}
		}
		if ct := s3.Get(t, s3.Bucket, "renders/"+id+".webp").ContentType; ct != "image/webp" {
			t.Fatalf("webp stored as %q", ct)
		}
	})

	t.Run("transformations", func(t *testing.T) {
		// The edge's GET parameters, made the same way: a 40 px wide WebP
		// of the 100×50 red box.
		r, res := o.store(t, o.Owner, "/v1/store/"+id+".webp?width=40")
		apitest.WantStatus(t, r, 200)
		variant := "renders/" + id + "_w-40.webp"
		if tr := res.TransformationResult; res.Outcome != "complete" || res.BaseResult.Status != "already_stored" || tr == nil ||
			tr.Status != "stored" || tr.Key != variant {
			t.Fatalf("store .webp?width=40: %s", r.Body)
		}
		obj := s3.Get(t, s3.Bucket, variant)
		img := apitest.DecodeImage(t, &apitest.Response{Header: http.Header{"Content-Type": {obj.ContentType}}, Body: obj.Body})
		apitest.WantSize(t, img, 40, 20)
		if p := apitest.Pixel(img, 20, 10); !apitest.Near(p, color.NRGBA{255, 0, 0, 255}, 24) { // lossy WebP
			t.Fatalf("stored variant shows %v, want red", p)
		}
		if _, res = o.store(t, o.Owner, "/v1/store/"+id+".webp?width=40&dl=1"); res.TransformationResult == nil ||
			res.TransformationResult.Status != "already_stored" {
			t.Fatalf("the same variant again: %+v", res)
		}
		// A crop outside the rendered image: the base is stored, its
		// transformation cannot be made.
		r, res = o.store(t, o.Owner, "/v1/store/"+id+"?x_1=500")
		apitest.WantStatus(t, r, 424)
		if tr := res.TransformationResult; res.Outcome != "partial" || tr == nil || tr.Status != "failed" ||
			tr.Key != "renders/"+id+"_x-500~.png" || !strings.Contains(res.Error, "cannot take the transformation") {
			t.Fatalf("store with a crop outside the image: %s", r.Body)
		}
		// Parameters the store does not know, or invalid ones, are refused
		// before anything is stored.
		for q, field := range map[string]string{"widht=40": "widht", "width=-1": "width", "dpi=5": "dpi"} {
			apitest.WantField(t, o.do(t, apitest.Request{Method: "PUT", Path: "/v1/store/" + id + "?" + q, Creds: &o.Owner}), field)
		}
		if keys := s3.Keys(t, s3.Bucket, "renders/"+id); len(keys) != 3 {
			t.Fatalf("objects of the image: %v, want the base, its .webp and the 40 px variant", keys)
		}
	})

	t.Run("not the caller's", func(t *testing.T) {
		_, other := o.newOrg(t.Context(), t, "pro")
		for _, tc := range []struct {
			name  string
			creds apitest.Creds
			path  string
		}{
			{"bad id", o.Owner, "/v1/store/not-an-image"},
			{"unknown id", o.Owner, "/v1/store/0196f0c2-0000-7000-8000-000000000000"},
			{"another organization", other, "/v1/store/" + id},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r, _ := o.store(t, tc.creds, tc.path)
				apitest.WantMessage(t, apitest.WantError(t, r, 404), "Image not found")
			})
		}
		r := o.do(t, apitest.Request{Method: "PUT", Path: "/v1/store/" + id})
		apitest.WantError(t, r, 401)
	})

	t.Run("hcti storage disabled", func(t *testing.T) {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: with("storage_destination_id", only)})
		apitest.WantStatus(t, r, 200)
		var c struct{ URL, ID string }
		r.Decode(t, &c)
		if c.URL != o.URL+"/v1/store/"+c.ID {
			t.Fatalf("create answered %s, want the /v1/store URL", r.Body)
		}
		apitest.WantError(t, o.get(t, "/v1/image/"+c.ID), 404)
		filesOf := func(id string) []string {
			f, _ := filepath.Glob(filepath.Join(o.DataDir, "images", "*", id, "*"))
			return f
		}
		files := func() []string { return filesOf(c.ID) }
		if len(filesOf(id)) == 0 {
			t.Fatal("no files found for an image with a service copy: the check below would prove nothing")
		}
		if f := files(); len(f) > 0 {
			t.Fatalf("files kept before the store: %v", f)
		}
		r, res := o.store(t, o.Owner, "/v1/store/"+c.ID)
		apitest.WantStatus(t, r, 200)
		if res.Outcome != "complete" || res.BaseResult.Status != "stored" || res.BaseResult.Key != "only/"+c.ID+".png" {
			t.Fatalf("store: %s", r.Body)
		}
		img, err := png.Decode(bytes.NewReader(s3.Get(t, s3.Bucket, "only/"+c.ID+".png").Body))
		if err != nil {
			t.Fatalf("stored object is not a PNG: %v", err)
		}
		apitest.WantSize(t, img, 100, 50)
		if _, res = o.store(t, o.Owner, "/v1/store/"+c.ID); res.BaseResult.Status != "already_stored" {
			t.Fatalf("repeat store: %+v", res)
		}
		apitest.WantError(t, o.get(t, "/v1/image/"+c.ID), 404)
		// Nothing of the image is kept in Pictor's storage.
		if f := files(); len(f) > 0 {
			t.Fatalf("files kept after the store: %v", f)
		}
	})

	t.Run("server stopped", func(t *testing.T) {
		s3.Stop()
		// The base object is already stored, its transformation fails.
		r, res := o.store(t, o.Owner, "/v1/store/"+id+".jpg")
		apitest.WantStatus(t, r, 424)
		if tr := res.TransformationResult; res.Outcome != "partial" || res.BaseResult.Status != "already_stored" || tr == nil ||
			tr.Status != "failed" || tr.Key != "renders/"+id+".jpg" || res.Error == "" || res.ReferenceID != r.Header.Get(contract.HeaderRequestID) {
			t.Fatalf("partial store: %s", r.Body)
		}
		// A fresh image (other HTML: no dedupe): its base object fails.
		fresh, _ := o.create(t, o.Owner, with("html", redBox+"<p>fresh</p>", "storage_destination_id", dest))
		for _, tc := range []struct{ name, ext, transformation string }{
			{"base", "", ""},
			{"with a transformation", ".jpg", "not_attempted"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r, res := o.store(t, o.Owner, "/v1/store/"+fresh+tc.ext)
				apitest.WantStatus(t, r, 424)
				if res.Outcome != "failed" || res.Success || res.StatusCode != 424 || res.BaseResult.Status != "failed" || res.Error == "" ||
					res.ReferenceID == "" || res.ReferenceID != r.Header.Get(contract.HeaderRequestID) {
					t.Fatalf("store with the server stopped: %s", r.Body)
				}
				if got := res.TransformationResult; (tc.transformation == "") != (got == nil) || (got != nil && got.Status != tc.transformation) {
					t.Fatalf("transformation: %s", r.Body)
				}
			})
		}
	})
}
