package field

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// wantFieldError checks that err is a 400 whose validation_errors name path.
func wantFieldError(t *testing.T, err error, path string) {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Fatalf("error %v, want a 400", err)
	}
	for _, f := range e.Fields {
		if f.Path == path && f.Message != "" {
			return
		}
	}
	t.Fatalf("validation errors %+v do not name %q", e.Fields, path)
}

func TestQueryNamesMalformedParameters(t *testing.T) {
	tests := []struct {
		name, raw, path string
	}{
		{"lone percent", "page_token=%%%", "page_token"},
		{"percent at the end", "count=5&page_token=abc%", "page_token"},
		{"not hex", "count=%zz", "count"},
		{"malformed name", "%zz=1", "query"},
		{"raw semicolon in a value", "a=1;b=2", "a"},
		{"raw semicolon in a name", "a;b=2", "query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Query(httptest.NewRequest("GET", "/v1/images?"+tc.raw, nil))
			wantFieldError(t, err, tc.path)
		})
	}
	// What url.ParseQuery reads, Query reads alike.
	for _, raw := range []string{"", "count=5&page_token=a%2Bb", "a=1&a=2&&b=+x+", "flag", "e=%E2%82%AC", "k="} {
		got, err := ParseQuery(raw)
		want, werr := url.ParseQuery(raw)
		if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %v (%v), want %v", raw, got, err, want)
		}
	}
	many := strings.Repeat("a=1&", MaxFormFields) + "b=2"
	wantFieldError(t, func() error { _, err := ParseQuery(many); return err }(), "query")
}

// formRequest is a POST of body with the content type.
func formRequest(ct string, body []byte) *http.Request {
	r := httptest.NewRequest("POST", "/v1/image", bytes.NewReader(body))
	r.Header.Set("Content-Type", ct)
	return r
}

// multipartBody has n fields named f<i> and one html field.
func multipartBody(n int) ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("html", "<p>x</p>")
	for i := range n - 1 {
		mw.WriteField(fmt.Sprint("f", i), "v")
	}
	mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

func urlencodedBody(n int) []byte {
	v := url.Values{"html": {"<p>x</p>"}}
	for i := range n - 1 {
		v.Set(fmt.Sprint("f", i), "v")
	}
	return []byte(v.Encode())
}

// TestFormFieldLimits: a form of many tiny fields, far below the byte limit,
// is refused with 413 naming the field limit, not the byte limit; one at
// the limit is read whole.
func TestFormFieldLimits(t *testing.T) {
	const maxBytes = 7 << 20
	mpMany, mpManyCT := multipartBody(50_000)
	mpMax, mpMaxCT := multipartBody(MaxFormFields)
	tests := []struct {
		name   string
		ct     string
		body   []byte
		status int // 0: read
	}{
		{"multipart, 50,000 parts", mpManyCT, mpMany, 413},
		{"urlencoded, 50,000 fields", "application/x-www-form-urlencoded", urlencodedBody(50_000), 413},
		{"multipart at the limit", mpMaxCT, mpMax, 0},
		{"urlencoded at the limit", "application/x-www-form-urlencoded", urlencodedBody(MaxFormFields), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.body) >= maxBytes {
				t.Fatalf("the body is %d bytes, not below the byte limit", len(tc.body))
			}
			o, err := DecodeAny(httptest.NewRecorder(), formRequest(tc.ct, tc.body), maxBytes)
			if tc.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got := len(o.Keys()); got != MaxFormFields {
					t.Fatalf("%d fields read, want %d", got, MaxFormFields)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != tc.status {
				t.Fatalf("error %v, want %d", err, tc.status)
			}
			if want := fmt.Sprintf("more than %d form fields", MaxFormFields); !strings.Contains(e.Message, want) {
				t.Fatalf("message %q does not say %q", e.Message, want)
			}
		})
	}
	// A form still names a field whose value is malformed.
	_, err := DecodeAny(httptest.NewRecorder(), formRequest("application/x-www-form-urlencoded", []byte("html=x&viewport_width=%G0")), maxBytes)
	wantFieldError(t, err, "viewport_width")
	// The byte limit is still named as such.
	_, err = DecodeAny(httptest.NewRecorder(), formRequest("application/x-www-form-urlencoded", bytes.Repeat([]byte("a"), 1<<10)), 100)
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != 413 || !strings.Contains(e.Message, "larger than 100 bytes") {
		t.Fatalf("oversized form: %v", err)
	}
}

// timeoutErr is a read deadline's error.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// stalled is a body that delivers a few bytes, then its read deadline.
type stalled struct{ first []byte }

func (s *stalled) Read(p []byte) (int, error) {
	if len(s.first) > 0 {
		n := copy(p, s.first)
		s.first = s.first[n:]
		return n, nil
	}
	return 0, timeoutErr{}
}

// TestBodyTimeoutIs408: whatever decoder reads it, a body that stops
// arriving is answered 408 and the connection closed, never 400.
func TestBodyTimeoutIs408(t *testing.T) {
	mp, mpCT := multipartBody(3)
	tests := []struct {
		name, ct string
		first    []byte
		decode   func(http.ResponseWriter, *http.Request, int64) (*Object, error)
	}{
		{"json", "application/json", []byte(`{"html":"`), DecodeAny},
		{"json only", "application/json", []byte(`{"ids":[`), DecodeJSON},
		{"urlencoded", "application/x-www-form-urlencoded", []byte("html=abc"), DecodeAny},
		{"multipart", mpCT, mp[:len(mp)/2], DecodeAny},
		{"multipart, in a header", mpCT, mp[:10], DecodeAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/image", io.NopCloser(&stalled{first: tc.first}))
			r.Header.Set("Content-Type", tc.ct)
			_, err := tc.decode(httptest.NewRecorder(), r, 1<<20)
			status, header, _ := apierr.Encode(err)
			if status != http.StatusRequestTimeout || header.Get("Connection") != "close" {
				t.Fatalf("error %v: %d %v, want 408 closing the connection", err, status, header)
			}
		})
	}
}

// FuzzParseURLEncoded: the strict parser reads exactly what url.ParseQuery
// reads when it accepts, and otherwise answers a 400 naming a field.
func FuzzParseURLEncoded(f *testing.F) {
	for _, s := range []string{"", "a=1", "a=1&b=%20", "%zz", "a=%", "a;b", "a=1;b", "&&=&", "+=+", "a=%E2%82%AC&a=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseURLEncoded(s, MaxFormFields)
		if errors.Is(err, errTooManyFields) {
			return
		}
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 || len(e.Fields) == 0 {
				t.Fatalf("%q: error %v is not a 400 naming a field", s, err)
			}
			return
		}
		want, werr := url.ParseQuery(s)
		if werr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %v, url.ParseQuery %v (%v)", s, got, want, werr)
		}
	})
}
