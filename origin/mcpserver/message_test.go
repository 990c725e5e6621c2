package mcpserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// idSeeds are ids of every shape checkID tells apart.
var idSeeds = []string{
	`1`, `0`, `-7`, `9007199254740992`, `-9007199254740992`, `9007199254740993`, `18446744073709551616`,
	`1.5`, `1.0`, `1e3`, `1e400`, `-0`, `01`, `{}`, `{"a":1}`, `[1]`, `true`, `null`,
	`"abc"`, `""`, `"é☃😀"`, `"<a&b>"`, `"a\"b"`, `"\u0041\/\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, "\"a\xffb\"",
	`"\ud800\u0041"`, `"\u12"`, `1,"id":2`,
}

// FuzzCheckID: an id readEnvelope accepts is one the SDK reads and writes
// back as the same JSON value (the same bytes for an integer).
func FuzzCheckID(f *testing.F) {
	for _, id := range idSeeds {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		msg := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if !json.Valid(msg) {
			return
		}
		e, err := readEnvelope(msg)
		if err != nil {
			return
		}
		m, err := jsonrpc.DecodeMessage(msg)
		if err != nil {
			t.Fatalf("accepted id %s, which the SDK refuses: %v", e.id, err)
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			t.Fatalf("accepted id %s, which the SDK reads as %#v", e.id, m)
		}
		out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if e.id[0] != '"' {
			if !bytes.Equal(back.ID, e.id) {
				t.Fatalf("id %s came back as %s", e.id, back.ID)
			}
			return
		}
		var sent, got string
		if json.Unmarshal(e.id, &sent) != nil || json.Unmarshal(back.ID, &got) != nil || sent != got {
			t.Fatalf("id %s came back as %s", e.id, back.ID)
		}
	})
}

// FuzzReadEnvelope: any input is read without a panic; an accepted
// message's members are those a decoder matching names exactly finds, and
// the SDK decodes it as a request of the same method and id: one with an
// id exactly when the method is not a notification.
func FuzzReadEnvelope(f *testing.F) {
	for _, id := range idSeeds {
		f.Add([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{}}`))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","ID":{},"id":5,"method":"x"}`, `{"jsonrpc":"2.0","\u0069d":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`, `{"jsonrpc":"2.0","result":{}}`, `{"jsonrpc":"2.0","id":"r","error":{"code":1,"message":"m"}}`,
		`{ "jsonrpc" : "2.0" , "id" : 12 , "method" : "x" }`, `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `{}`, `{"a":"\"}"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[[[{"b":"]]"}]]]}}`, `{"jsonrpc":"2.0","id":1,"method":"x"}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":7}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"} `, `{"jsonrpc":"2.0","id":1,"method":"x"`, `{"jsonrpc":"2.0","id":1,"method":"x"}}`,
		// Notifications and ids, params, answers inside a request.
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"check_usage"}}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`, `{"jsonrpc":"2.0","method":"notifications\/cancelled","params":{}}`,
		`{"jsonrpc":"2.0","method":"\u006eotifications/x"}`, `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":5}`, `{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","error":5}`, `{"jsonrpc":"2.0","id":1,"method":"ping","Error":5}`,
		`{"jsonrpc":"2.0","id":"x","error":5}`, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xffb\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := readEnvelope(body)
		if err != nil || !json.Valid(body) {
			return
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil {
			t.Fatalf("accepted %q, not an object: %v", body, err)
		}
		for name, got := range map[string]json.RawMessage{"jsonrpc": e.version, "id": e.id, "method": e.method, "params": e.params, "result": e.result, "error": e.error} {
			if want, ok := members[name]; !bytes.Equal(got, want) || (got == nil) == ok {
				t.Fatalf("%q: %s is %s, want %s", body, name, got, want)
			}
		}
		m, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			t.Fatalf("accepted %q, which the SDK refuses: %v", body, err)
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || req.ID.IsValid() != (e.id != nil) || req.Method != e.name {
			t.Fatalf("accepted %q (method %q), which the SDK reads as %#v", body, e.name, m)
		}
		if strings.HasPrefix(e.name, notificationPrefix) == (e.id != nil) {
			t.Fatalf("accepted %q: method %q with id %s", body, e.name, e.id)
		}
	})
}
