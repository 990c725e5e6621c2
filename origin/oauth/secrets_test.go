package oauth

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/perm"
)

// TestSecretsStayHidden: the API key typed on the consent page appears in no
// answer, no log line and no record; tokens and client secrets are not logged.
func TestSecretsStayHidden(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	confidential := e.register(t, map[string]any{"redirect_uris": []string{testRedirect}})
	apiID, apiKey := e.keys.add("key-1", "org-1", perm.Grant{Permissions: perms("images:read", "images:create")})
	_, challenge := pkce()
	q := authorizeQuery(clientID, testRedirect, challenge, "")

	// Wrong keys that contain the right one, the right one, a page shown
	// again, a denial, an approval, a key disabled between the steps.
	e.signIn(t, e.browser(t), q, apiID, apiKey+"-wrong")
	e.signIn(t, e.browser(t), q, apiID, "x"+apiKey)
	b := e.browser(t)
	consent := e.signIn(t, b, q, apiID, apiKey)
	again := e.decide(t, b, consent, "approve")
	e.decide(t, b, again, "deny")
	b = e.browser(t)
	e.decide(t, b, e.signIn(t, b, q, apiID, apiKey), "approve", "images:read")
	b = e.browser(t)
	consent = e.signIn(t, b, q, apiID, apiKey)
	e.keys.setDisabled("key-1", true)
	e.decide(t, b, consent, "approve", "images:read")
	e.keys.setDisabled("key-1", false)

	c := e.approve(t, clientID, "", perms("images:read"), "images:read")
	access, refresh := e.tokens(t, c)
	if a := e.refresh(t, clientID, refresh); a.status != http.StatusOK {
		t.Fatal(a.body)
	}
	e.refresh(t, clientID, refresh) // reuse: revoked, logged at warn
	e.srv.Verify(context.Background(), access)
	for range 6 {
		e.signIn(t, e.browser(t), q, apiID, apiKey+"-again") // up to the limit
	}

	if strings.Contains(e.bodies.String(), apiKey) {
		t.Error("a response body holds the API key")
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "oauth sign-in failed") || !strings.Contains(logs, "oauth refresh token reused") {
		t.Fatalf("the test captured no logs:\n%s", logs)
	}
	for name, secret := range map[string]string{
		"API key": apiKey, "other API key": c.apiKey, "code": c.code, "access token": access,
		"refresh token": refresh, "client secret": confidential["client_secret"].(string),
	} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold the %s", name)
		}
	}
	it := e.store.Iterate(t.Context(), nil, kv.IterOptions{})
	defer it.Close()
	for it.Next() {
		for name, secret := range map[string]string{"API key": apiKey, "code": c.code, "refresh token": refresh} {
			if strings.Contains(string(it.Key()), secret) || strings.Contains(string(it.Value()), secret) {
				t.Errorf("record %s holds the %s", it.Key(), name)
			}
		}
	}
}
