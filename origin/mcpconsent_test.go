package origin_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// consentRequest registers a public OAuth client whose redirect URI is
// callback and returns the authorization URL of a PKCE request, with its
// verifier.
func consentRequest(t *testing.T, o *testOrigin, callback string) (authURL, clientID, verifier string) {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "POST", Path: "/oauth/register", JSON: map[string]any{
		"client_name": "Consent test assistant", "redirect_uris": []string{callback}, "token_endpoint_auth_method": "none"}})
	apitest.WantStatus(t, r, 201)
	var c struct {
		ClientID string `json:"client_id"`
	}
	r.Decode(t, &c)
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {c.ClientID}, "redirect_uri": {callback},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {"person-test"}, "resource": {o.URL + "/mcp"}, "scope": {"images:create usage:read templates:read"}}
	return o.URL + "/oauth/authorize?" + q.Encode(), c.ClientID, verifier
}

// TestConsentPageInChromium loads the consent page in headless Chromium
// and answers it as a person would: a wrong key first (the form again,
// with an error), then the right one, one permission unticked, Approve.
// The browser lands on the client's redirect URI with a code that buys a
// token with exactly the ticked permissions. A page of another site
// cannot frame the consent page.
func TestConsentPageInChromium(t *testing.T) {
	o := startOrigin(t)
	landed := make(chan url.Values, 1)
	client := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cb" {
			select {
			case landed <- r.URL.Query():
			default:
			}
			fmt.Fprint(w, "<!doctype html><title>connected</title><p id=done>connected</p>")
			return
		}
		// Another site that frames the consent page.
		fmt.Fprintf(w, `<!doctype html><iframe id=f src=%q width=600 height=400></iframe>`, r.URL.Query().Get("frame"))
	}))
	defer client.Close()
	authURL, clientID, verifier := consentRequest(t, o, client.URL+"/cb")

	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}

	do("open the consent page", chromedp.Navigate(authURL), chromedp.WaitVisible(chromedp.CSS("#api_id")))
	if page := text("main"); !strings.Contains(page, "Consent test assistant") || !strings.Contains(page, "127.0.0.1") {
		t.Fatalf("the page does not say who asks and where it goes back to:\n%s", page)
	}
	do("sign in with a wrong key",
		chromedp.SendKeys(chromedp.CSS("#api_id"), o.Owner.APIID),
		chromedp.SendKeys(chromedp.CSS("#api_key"), "not-the-key"),
		chromedp.Click(chromedp.CSS("button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(".error")))
	// The form again: the api_id kept, the key never sent back.
	again, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[document.querySelector('#api_id').value, document.querySelector('#api_key').value]`))
	if err != nil || again[0] != o.Owner.APIID || again[1] != "" {
		t.Fatalf("the sign-in form shown again holds %q (%v)", again, err)
	}
	do("sign in",
		chromedp.SendKeys(chromedp.CSS("#api_key"), o.Owner.APIKey),
		chromedp.Click(chromedp.CSS("button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
	offered, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('input[name=scope]')].map(e => e.value)`))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(offered)
	if want := []string{"images:create", "templates:read", "usage:read"}; !slices.Equal(offered, want) {
		t.Fatalf("offered %v, want the requested %v", offered, want)
	}
	if strings.Contains(text("main"), o.Owner.APIKey) {
		t.Fatal("the consent page shows the API key")
	}
	do("untick usage:read and approve",
		chromedp.Click(chromedp.CSS(`input[value="usage:read"]`)),
		chromedp.Click(chromedp.CSS(`button[value=approve]`)))
	var back url.Values
	select {
	case back = <-landed:
	case <-ctx.Done():
		t.Fatal("the browser never reached the redirect URI")
	}
	if back.Get("state") != "person-test" || back.Get("code") == "" || back.Get("iss") != o.URL {
		t.Fatalf("redirected with %v", back)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {back.Get("code")}, "redirect_uri": {client.URL + "/cb"},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {o.URL + "/mcp"}}
	r := o.do(t, apitest.Request{Method: "POST", Path: "/oauth/token", Raw: form.Encode(), ContentType: "application/x-www-form-urlencoded"})
	apitest.WantStatus(t, r, 200)
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	r.Decode(t, &tok)
	granted := strings.Fields(tok.Scope)
	slices.Sort(granted)
	if tok.AccessToken == "" || !slices.Equal(granted, []string{"images:create", "templates:read"}) {
		t.Fatalf("token scope %q, want the two permissions left ticked", tok.Scope)
	}

	// Clickjacking: another site's frame of the consent page stays empty.
	framer := client.URL + "/framer?frame=" + url.QueryEscape(authURL)
	do("frame the consent page", chromedp.Navigate(framer), chromedp.WaitReady(chromedp.CSS("#f")))
	tree, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (page.GetFrameTreeResult, error) {
		return cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.FrameTree.ChildFrames) != 1 {
		raw, _ := json.Marshal(tree)
		t.Fatalf("frame tree %s", raw)
	}
	if f := tree.FrameTree.ChildFrames[0].Frame; strings.HasPrefix(f.URL, o.URL) || !strings.HasPrefix(f.URL, "chrome-error://") {
		t.Fatalf("the consent page loaded in another site's frame (%s)", f.URL)
	}
}
