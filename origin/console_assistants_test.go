package origin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// hostileClientName is a client's name chosen to break out of a page:
// clients name themselves at registration.
const hostileClientName = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`

// revokeAction is the console's revoke form of a connection.
func revokeAction(id string) string { return "/console/assistants/" + id + "/revoke" }

// TestConsoleAssistants: the connected assistants page explains how to
// connect while there is none, lists a connection, and revokes it through
// DELETE /v1/oauth-grants/{id}: its tokens are refused afterwards. The
// form token is required, and a key without api_keys:delete sees the
// button disabled with the permission's name and cannot revoke.
func TestConsoleAssistants(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)

	empty := c.send("GET", "/console/assistants", nil)
	if empty.status != 200 || !strings.Contains(empty.body, `id="no-assistants"`) || !strings.Contains(empty.body, o.URL+origin.MCPPath) {
		t.Fatalf("the page without connections: %d\n%s", empty.status, empty.body)
	}
	if !strings.Contains(empty.body, `<a href="/console/storage-destinations">Storage</a></li><li><a href="/console/assistants" aria-current="page">Connected assistants</a>`) {
		t.Error("the page is not in the navigation after Storage")
	}

	g := mcpConnect(t, o, o.Owner, nil)
	id := o.grantOf(t, o.Owner, g.ClientID).ID
	list := c.send("GET", "/console/assistants", nil)
	if list.status != 200 || !strings.Contains(list.body, `action="`+revokeAction(id)+`"`) || !strings.Contains(list.body, "MCP integration test") ||
		!strings.Contains(list.body, o.Owner.APIID) || !strings.Contains(list.body, "<code>images:create</code>") {
		t.Fatalf("the page with a connection: %d\n%s", list.status, list.body)
	}
	if strings.Contains(list.body, g.Access) || strings.Contains(list.body, g.Refresh) {
		t.Fatal("the page holds a token")
	}
	csrf := csrfOf(t, list.body)

	// A key that reads the connections but may not revoke them.
	reader := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"api_keys:read"}})
	rc := &consoleClient{t: t, base: o.URL}
	rc.signIn(*reader.creds())
	seen := rc.send("GET", "/console/assistants", nil)
	if !strings.Contains(seen.body, "This key lacks the api_keys:delete permission.") ||
		!strings.Contains(seen.body, `class="button-danger" disabled aria-describedby="revoke-needs"`) {
		t.Errorf("a key without api_keys:delete:\n%s", seen.body)
	}
	if a := rc.send("POST", revokeAction(id), url.Values{"csrf": {csrfOf(t, seen.body)}}); a.status != http.StatusForbidden {
		t.Errorf("a forged revocation without api_keys:delete: %d", a.status)
	}
	// A key that may not read them sees why.
	blind := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"usage:read"}})
	bc := &consoleClient{t: t, base: o.URL}
	bc.signIn(*blind.creds())
	if a := bc.send("GET", "/console/assistants", nil); !strings.Contains(a.body, "This key lacks the api_keys:read permission.") || strings.Contains(a.body, id) {
		t.Errorf("a key without api_keys:read:\n%s", a.body)
	}
	// Without the form token nothing happens.
	if a := c.send("POST", revokeAction(id), url.Values{}); a.status != http.StatusForbidden {
		t.Errorf("revoke without the form token: %d", a.status)
	}
	apitest.WantStatus(t, mcpPost(t, o.URL+origin.MCPPath, g.Access, mcpToolsList), http.StatusOK)

	a := c.send("POST", revokeAction(id), url.Values{"csrf": {csrf}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/assistants" {
		t.Fatalf("revoke: %d %s\n%s", a.status, a.header.Get("Location"), a.body)
	}
	wantGrantRefused(t, o, g)
	if after := c.send("GET", "/console/assistants", nil); !strings.Contains(after.body, `id="no-assistants"`) {
		t.Errorf("the revoked connection is still listed:\n%s", after.body)
	}
	if again := c.send("POST", revokeAction(id), url.Values{"csrf": {csrf}}); again.status != http.StatusNotFound {
		t.Errorf("revoking again: %d", again.status)
	}
}

// TestHostileConsoleAssistants: a client's self-chosen name is text in
// the page, never markup, and another organization's console cannot
// revoke a connection it does not own (the REST route's 404).
func TestHostileConsoleAssistants(t *testing.T) {
	o := startOrigin(t)
	g := mcpConnectNamed(t, o.URL, hostileClientName, o.Owner, nil)
	id := o.grantOf(t, o.Owner, g.ClientID).ID

	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	page := c.send("GET", "/console/assistants", nil)
	if page.status != 200 || !strings.Contains(page.body, id) {
		t.Fatalf("the page: %d\n%s", page.status, page.body)
	}
	if strings.Contains(page.body, "<script>alert") || strings.Contains(page.body, "<img src=x") {
		t.Fatalf("the client's name is markup in the page:\n%s", page.body)
	}
	if !strings.Contains(page.body, `<td role="cell" class="client-name" data-label="Assistant">&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;</td>`) {
		t.Errorf("the client's name is not shown escaped:\n%s", page.body)
	}

	_, other := o.newOrg(t.Context(), t, "pro")
	oc := &consoleClient{t: t, base: o.URL}
	oc.signIn(other)
	theirs := oc.send("GET", "/console/assistants", nil)
	if strings.Contains(theirs.body, id) {
		t.Fatal("another organization sees the connection")
	}
	if a := oc.send("POST", revokeAction(id), url.Values{"csrf": {csrfOf(t, theirs.body)}}); a.status != http.StatusNotFound {
		t.Errorf("another organization's revocation: %d", a.status)
	}
	apitest.WantStatus(t, mcpPost(t, o.URL+origin.MCPPath, g.Access, mcpToolsList), http.StatusOK)
}

// TestConsoleAssistantsInABrowser: in Chromium, the list shows a hostile
// client name as text; the Revoke button, reached with the keyboard,
// asks first (naming the client), and once confirmed the connection's
// tokens are refused. The page with a connection passes axe-core and fits
// a phone's width.
func TestConsoleAssistantsInABrowser(t *testing.T) {
	o := startOrigin(t)
	g := mcpConnectNamed(t, o.URL, hostileClientName, o.Owner, nil)
	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(o.URL+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`#api_id`)),
		chromedp.SendKeys(chromedp.CSS(`#api_id`), o.Owner.APIID),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), o.Owner.APIKey),
		chromedp.Submit(chromedp.CSS(`#api_key`)),
		chromedp.WaitVisible(chromedp.CSS(`#credits-used`)),
		chromedp.Navigate(o.URL+"/console/assistants"),
		chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] #assistants`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// At a desk's width the connections are a table, on a phone a block
	// each: both checked the same way.
	for _, width := range []int64{1024, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Reload(),
			chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] #assistants`))); err != nil {
			t.Fatal(err)
		}
		type view struct {
			Name   string
			Markup int
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[view](`({Name: document.querySelector("#assistants .client-name").textContent,
			Markup: document.querySelectorAll("main script, #assistants img").length})`))
		if err != nil {
			t.Fatal(err)
		}
		if v.Name != hostileClientName || v.Markup != 0 {
			t.Errorf("%d px: the client's name shows as %q with %d script or img elements", width, v.Name, v.Markup)
		}
		lookAt(ctx, t, fmt.Sprintf("assistants-list-light-%d", width))
	}

	// Revoking, with the keyboard (focus on the button, Enter), asks
	// first, naming the client: declined, nothing happens.
	button := chromedp.CSS(`#assistants button.button-danger`)
	err = chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`window.confirm = (text) => { document.documentElement.dataset.asked = text; return false; }`),
		chromedp.Focus(button),
		chromedp.KeyEvent("\r"),
		chromedp.WaitReady(chromedp.CSS(`html[data-asked]`)),
	)
	if err != nil {
		t.Fatalf("declined revocation: %v", err)
	}
	asked, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.asked`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(asked, hostileClientName) {
		t.Errorf("the confirmation asks %q, without the client's name", asked)
	}
	apitest.WantStatus(t, mcpPost(t, o.URL+origin.MCPPath, g.Access, mcpToolsList), http.StatusOK)
	// Accepted: the connection is gone, and so are its tokens.
	err = chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Focus(button),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#no-assistants`)),
	)
	if err != nil {
		t.Fatalf("revoke: %v", err)
	}
	wantGrantRefused(t, o, g)
}
