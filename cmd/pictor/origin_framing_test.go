package main

import (
	"bufio"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/framing"
)

// TestHostileServeOriginFraming: the case of issue 27 end to end, on the
// origin's port of `pictor serve`. A request with Content-Length and
// Transfer-Encoding: chunked, followed on the same connection by a request
// with valid credentials of the organization, is answered 400 with the
// standard body naming the problem and the connection closes: the second
// request is not answered (net/http alone read the first as chunked, kept
// the connection and answered the second 200), and its credentials reach
// no log. (origin/api's TestHostileOriginFraming runs the whole shared
// table against the origin's listener.)
func TestHostileServeOriginFraming(t *testing.T) {
	s := startServe(t, t.TempDir(), nil)
	basic := base64.StdEncoding.EncodeToString([]byte(s.Owner.APIID + ":" + s.Owner.APIKey))
	var row apitest.FramingCase
	for _, tc := range apitest.MalformedFraming("GET /v1/api-keys HTTP/1.1\r\nHost: e\r\nAuthorization: Basic " + basic + "\r\n\r\n") {
		if tc.Reason == framing.ErrBothLengths {
			row = tc
			break
		}
	}
	if row.Request == "" {
		t.Fatal("the shared table has no request with Content-Length and chunked")
	}

	c, err := net.Dial("tcp", strings.TrimPrefix(s.OriginURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, row.Request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing follows: the smuggled request is not answered.
	rest, err := io.ReadAll(br)
	if len(rest) > 0 {
		t.Fatalf("after the answer %d %s, the smuggled request was answered: %q", resp.StatusCode, body, rest)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection was left open")
	}
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading after the answer: %v", err)
	}
	r := &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	apitest.WantMessage(t, apitest.WantError(t, r, http.StatusBadRequest), "Malformed HTTP request: "+framing.ErrBothLengths.Error())
	if !resp.Close {
		t.Error("no Connection: close")
	}

	// The port still serves the organization's requests.
	apitest.WantStatus(t, apitest.Do(t, s.OriginURL, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &s.Owner}), 200)
	for _, secret := range []string{basic, s.Owner.APIKey, apitest.SmuggledSecret} {
		if strings.Contains(s.Logs.String(), secret) {
			t.Fatalf("credentials of the refused bytes in the logs:\n%s", s.Logs.String())
		}
	}
}
