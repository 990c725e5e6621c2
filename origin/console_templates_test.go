package origin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	_ "image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// templateVersions are a template's versions over REST, newest first.
func templateVersions(t *testing.T, o *testOrigin, id string) []map[string]any {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	var page struct {
		Data []map[string]any `json:"data"`
	}
	r.Decode(t, &page)
	return page.Data
}

// formField is the text of the textarea, or the value of the input, with
// that id in a page.
func formField(t *testing.T, page, id string) string {
	t.Helper()
	if m := regexp.MustCompile(`(?s)<textarea id="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</textarea>`).FindStringSubmatch(page); m != nil {
		return html.UnescapeString(strings.TrimPrefix(m[1], "\n"))
	}
	if m := regexp.MustCompile(`<input id="` + regexp.QuoteMeta(id) + `"[^>]*? value="([^"]*)"`).FindStringSubmatch(page); m != nil {
		return html.UnescapeString(m[1])
	}
	t.Fatalf("no field %s in the page:\n%s", id, page)
	return ""
}

var savedLocation = regexp.MustCompile(`^/console/templates/(t-[^/?]+)\?saved=(\d+)`)

// TestConsoleTemplates: a template created through the console is there
// over REST, render defaults included; an edit after a render is a new
// version over REST; an old version is shown read-only with its date and
// restored as a new version with its content; REST validation shows next
// to its field; the list pages; delete ends it.
func TestConsoleTemplates(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	list := c.send("GET", "/console/templates", nil)
	if list.status != 200 || !strings.Contains(list.body, `id="no-templates"`) || !strings.Contains(list.body, `href="/console/templates/new"`) {
		t.Fatalf("empty list: %d\n%s", list.status, list.body)
	}
	form := c.send("GET", "/console/templates/new", nil)
	for _, name := range []string{"name", "description", "html", "css", "viewport_width", "device_scale", "render_when_ready", "headers"} {
		if !strings.Contains(form.body, ` name="`+name+`"`) {
			t.Errorf("the creation form has no field %s", name)
		}
	}
	csrf := csrfOf(t, form.body)

	bad := c.send("POST", "/console/templates", url.Values{"csrf": {csrf}, "name": {"Card"}, "html": {"<p>{{#if x}}</p>"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="tpl-html-error"`) || !strings.Contains(bad.body, "line 1") || !strings.Contains(bad.body, `value="Card"`) {
		t.Errorf("a template that does not compile: %d\n%s", bad.status, bad.body)
	}
	badDefault := c.send("POST", "/console/templates", url.Values{"csrf": {csrf}, "html": {"<p>x</p>"}, "viewport_width": {"0"}})
	if badDefault.status != http.StatusBadRequest || !strings.Contains(badDefault.body, `id="opt-viewport_width-error"`) {
		t.Errorf("viewport_width 0: %d\n%s", badDefault.status, badDefault.body)
	}

	made := c.send("POST", "/console/templates", url.Values{"csrf": {csrf}, "name": {"Card"}, "description": {"the first"},
		"html": {`<div class="card">{{title}}</div>`}, "css": {".card { color: red; }"}, "viewport_width": {"300"}, "viewport_height": {"200"}, "render_when_ready": {"false"}})
	m := savedLocation.FindStringSubmatch(made.header.Get("Location"))
	if made.status != http.StatusSeeOther || m == nil {
		t.Fatalf("create: %d %q\n%s", made.status, made.header.Get("Location"), regexp.MustCompile(`(?s)<main.*</main>`).FindString(made.body))
	}
	id := m[1]
	vs := templateVersions(t, o, id)
	if len(vs) != 1 || vs[0]["name"] != "Card" || vs[0]["description"] != "the first" || vs[0]["html"] != `<div class="card">{{title}}</div>` ||
		vs[0]["css"] != ".card { color: red; }" || vs[0]["viewport_width"] != 300.0 || vs[0]["render_when_ready"] != false {
		t.Fatalf("over REST: %v", vs)
	}
	if d, _ := vs[0]["render_defaults"].(map[string]any); d["render_when_ready"] != false || len(d) != 3 {
		t.Errorf("render defaults over REST: %v", vs[0]["render_defaults"])
	}

	edit := c.send("GET", made.header.Get("Location"), nil)
	if edit.status != 200 || !strings.Contains(edit.body, `id="saved"`) || formField(t, edit.body, "tpl-html") != `<div class="card">{{title}}</div>` ||
		formField(t, edit.body, "opt-viewport_width") != "300" || !strings.Contains(edit.body, `data-template-value="title"`) ||
		!strings.Contains(edit.body, `data-preview="/console/templates/preview"`) || !strings.Contains(edit.body, `data-preview-image`) ||
		!strings.Contains(edit.body, `data-preview-status id="preview-status" aria-live="polite"`) {
		t.Fatalf("the editor: %d\n%s", edit.status, edit.body)
	}
	list = c.send("GET", "/console/templates", nil)
	if !strings.Contains(list.body, `href="/console/templates/`+id+`"`) || !strings.Contains(list.body, ">Card<") {
		t.Errorf("the list does not show the template:\n%s", list.body)
	}

	// A render makes version 1 final: the next save is version 2.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + id, Creds: &o.Owner, JSON: map[string]any{"template_values": map[string]any{"title": "a"}}}), 200)
	saved := c.send("POST", "/console/templates/"+id, url.Values{"csrf": {csrf}, "name": {"Card 2"}, "description": {"the second"},
		"html": {`<div class="card">{{title}} {{subtitle}}</div>`}, "css": {""}, "viewport_width": {"400"}, "viewport_height": {"200"}})
	if m := savedLocation.FindStringSubmatch(saved.header.Get("Location")); saved.status != http.StatusSeeOther || m == nil || m[2] != "2" {
		t.Fatalf("edit: %d %q\n%s", saved.status, saved.header.Get("Location"), saved.body)
	}
	vs = templateVersions(t, o, id)
	if len(vs) != 2 || vs[0]["version"] != 2.0 || vs[0]["name"] != "Card 2" || vs[0]["viewport_width"] != 400.0 || !jsonEqual(vs[0]["render_defaults"], map[string]any{"viewport_height": 200, "viewport_width": 400}) {
		t.Fatalf("after the edit, over REST: %v", vs)
	}
	badEdit := c.send("POST", "/console/templates/"+id, url.Values{"csrf": {csrf}, "name": {strings.Repeat("n", 65)}, "html": {"<p>x</p>"}})
	if badEdit.status != http.StatusBadRequest || !strings.Contains(badEdit.body, `id="tpl-name-error"`) {
		t.Errorf("a name too long: %d\n%s", badEdit.status, badEdit.body)
	}

	// Version 1, read-only, with its date; restored as version 3.
	old := c.send("GET", "/console/templates/"+id+"?version=1", nil)
	if old.status != 200 || !strings.Contains(old.body, `id="old-version"`) || formField(t, old.body, "old-html") != `<div class="card">{{title}}</div>` ||
		!strings.Contains(old.body, `<textarea id="old-html" class="code" rows="10" spellcheck="false" readonly>`) || strings.Contains(old.body, `id="template-form"`) ||
		!strings.Contains(old.body, `<time datetime="2026-03-14T15:09:26`) || !strings.Contains(old.body, `name="version" value="1"`) {
		t.Fatalf("version 1: %d\n%s", old.status, old.body)
	}
	if a := c.send("GET", "/console/templates/"+id+"?version=9", nil); a.status != http.StatusNotFound {
		t.Errorf("version 9: %d", a.status)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + id, Creds: &o.Owner, JSON: map[string]any{"template_values": map[string]any{"title": "b"}}}), 200)
	restored := c.send("POST", "/console/templates/"+id+"/restore", url.Values{"csrf": {csrf}, "version": {"1"}})
	if loc := restored.header.Get("Location"); restored.status != http.StatusSeeOther || loc != "/console/templates/"+id+"?saved=3&restored=1" {
		t.Fatalf("restore: %d %q\n%s", restored.status, loc, restored.body)
	}
	vs = templateVersions(t, o, id)
	if len(vs) != 3 || vs[0]["version"] != 3.0 {
		t.Fatalf("after the restore: %v", vs)
	}
	for _, k := range []string{"name", "description", "html", "css", "viewport_width", "render_defaults"} {
		if a, b := vs[0][k], vs[2][k]; !jsonEqual(a, b) {
			t.Errorf("restored %s: %v, version 1 had %v", k, a, b)
		}
	}
	if page := c.send("GET", restored.header.Get("Location"), nil); !strings.Contains(page.body, "Version 1 restored as version 3.") {
		t.Errorf("the restore's notice:\n%s", page.body)
	}

	// Paging: three templates, two a page.
	for _, name := range []string{"B", "C"} {
		c.send("POST", "/console/templates", url.Values{"csrf": {csrf}, "name": {name}, "html": {"<p>x</p>"}})
	}
	first := c.send("GET", "/console/templates?count=2", nil)
	next := regexp.MustCompile(`id="next-page" href="([^"]+)"|href="([^"]+)" rel="next" id="next-page"`).FindStringSubmatch(first.body)
	if next == nil || !strings.Contains(first.body, ">C<") || strings.Contains(first.body, ">Card<") {
		t.Fatalf("first page:\n%s", first.body)
	}
	second := c.send("GET", html.UnescapeString(next[1]+next[2]), nil)
	if second.status != 200 || !strings.Contains(second.body, ">Card<") || strings.Contains(second.body, `id="next-page"`) {
		t.Errorf("second page: %d\n%s", second.status, second.body)
	}

	gone := c.send("POST", "/console/templates/"+id+"/delete", url.Values{"csrf": {csrf}})
	if gone.status != http.StatusSeeOther || gone.header.Get("Location") != "/console/templates" {
		t.Fatalf("delete: %d\n%s", gone.status, gone.body)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: &o.Owner}), 404)
	if a := c.send("GET", "/console/templates/"+id, nil); a.status != http.StatusNotFound {
		t.Errorf("the deleted template's page: %d", a.status)
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// signedURLOf is the signed URL a page shows.
var signedURLOf = regexp.MustCompile(`<input id="signed-url" class="code" value="([^"]+)" readonly>`)

// TestConsoleTemplateSignedURL: the values form makes the signed URL of
// the template through REST; fetched over HTTP (no credentials), it
// renders the values. A variable's field changed from the JSON wins; the
// REST route refuses what it cannot sign, by field.
func TestConsoleTemplateSignedURL(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	csrf := csrfOf(t, c.send("GET", "/console/templates/new", nil).body)
	made := c.send("POST", "/console/templates", url.Values{"csrf": {csrf}, "name": {"Swatch"},
		"html": {`<div style="width:{{w}}px;height:100px;background:{{color}}"></div>`}, "device_scale": {"1"}})
	m := savedLocation.FindStringSubmatch(made.header.Get("Location"))
	if m == nil {
		t.Fatalf("create: %d\n%s", made.status, made.body)
	}
	id := m[1]
	edit := c.send("GET", "/console/templates/"+id, nil)
	for _, v := range []string{"color", "w"} {
		if !strings.Contains(edit.body, `name="value.`+v+`"`) {
			t.Errorf("the values form has no field for %s:\n%s", v, edit.body)
		}
	}
	// The JSON says red, the color field (changed) says blue: the field wins.
	signed := c.send("POST", "/console/templates/"+id+"/signed-url", url.Values{"csrf": {csrf}, "template_values": {`{"color": "#f00", "w": 200}`},
		"value.color": {"#00f"}, "value.w": {"200"}, "signed_pin": {"1"},
		"html": {"<p>unsaved</p>"}, "name": {"Swatch"}})
	u := signedURLOf.FindStringSubmatch(signed.body)
	if signed.status != 200 || u == nil || !strings.Contains(signed.body, `data-copy-target="#signed-url"`) {
		t.Fatalf("sign: %d\n%s", signed.status, signed.body)
	}
	if formField(t, signed.body, "tpl-html") != "<p>unsaved</p>" {
		t.Errorf("what was typed is not kept in the editor")
	}
	var shown map[string]any
	if err := json.Unmarshal([]byte(formField(t, signed.body, "template-values")), &shown); err != nil || shown["color"] != "#00f" || shown["w"] != 200.0 {
		t.Errorf("the values shown after signing: %v, %v", shown, err)
	}
	link, err := url.Parse(html.UnescapeString(u[1]))
	if err != nil || !strings.HasPrefix(link.Path, "/v1/image/"+id+"/") || link.Query().Get("template_version") != "1" {
		t.Fatalf("signed URL %q: %v", u[1], err)
	}
	got := o.do(t, apitest.Request{Method: "GET", Path: link.RequestURI()}) // no credentials
	apitest.WantStatus(t, got, 200)
	img, format, err := image.Decode(bytes.NewReader(got.Body))
	if err != nil || format != "png" || img.Bounds().Dx() != 200 || img.Bounds().Dy() != 100 {
		t.Fatalf("the signed URL's image: %v, %s, %v", err, format, img.Bounds())
	}
	if r, g, b, _ := img.At(100, 50).RGBA(); r>>8 > 60 || g>>8 > 60 || b>>8 < 200 {
		t.Errorf("the image's centre is not blue: %d %d %d", r>>8, g>>8, b>>8)
	}
	tampered := strings.Replace(link.RequestURI(), "w=200", "w=300", 1)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: tampered}), 401)

	// A string that reads as JSON stays a string; a format segment.
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id + "/signed-url", Creds: &o.Owner,
		JSON: map[string]any{"template_values": map[string]any{"color": "#0f0", "w": "120"}, "format": "JPG"}})
	apitest.WantStatus(t, r, 200)
	var answer struct{ URL string }
	r.Decode(t, &answer)
	if !strings.Contains(answer.URL, "/jpg?") || !strings.Contains(answer.URL, "w=%22120%22") || strings.Contains(answer.URL, o.Owner.APIKey) {
		t.Errorf("signed URL %q", answer.URL)
	}

	// Refusals, each naming its field.
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		field  string
	}{
		{"values not an object", map[string]any{"template_values": []int{1}}, 400, "template_values"},
		{"a value named template_version", map[string]any{"template_values": map[string]any{"template_version": 2}}, 400, "template_values.template_version"},
		{"an unknown format", map[string]any{"format": "gif"}, 400, "format"},
		{"version 0", map[string]any{"template_version": 0}, 400, "template_version"},
		{"too long", map[string]any{"template_values": map[string]any{"color": strings.Repeat("x", 9000)}}, 400, "template_values"},
		{"no such version", map[string]any{"template_version": 7}, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id + "/signed-url", Creds: &o.Owner, JSON: tc.body})
			apitest.WantStatus(t, r, tc.status)
			if tc.field != "" {
				apitest.WantField(t, r, tc.field)
			}
		})
	}
	_, other := o.newOrg(t.Context(), t, "pro")
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id + "/signed-url", Creds: &other, JSON: map[string]any{}}), 404)
	reader := o.createKey(t, o.Owner, map[string]any{"name": "reader", "permissions": []string{"templates:read"}})
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id + "/signed-url", Creds: reader.creds(), JSON: map[string]any{}}), 403)

	bad := c.send("POST", "/console/templates/"+id+"/signed-url", url.Values{"csrf": {csrf}, "template_values": {`{"color":`}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="template-values-error">is not a JSON object<`) || signedURLOf.MatchString(bad.body) {
		t.Errorf("values that are not JSON: %d\n%s", bad.status, bad.body)
	}
}

// TestConsoleTemplatesWithoutWrite: a key that may read templates but
// not change them sees every action disabled with the permission's name,
// and its POSTs are refused by the REST routes (nothing changes).
func TestConsoleTemplatesWithoutWrite(t *testing.T) {
	o := startOrigin(t)
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"name": "Kept", "html": "<p>{{x}}</p>"}})
	apitest.WantStatus(t, r, 201)
	var made struct {
		ID string `json:"template_id"`
	}
	r.Decode(t, &made)
	reader := o.createKey(t, o.Owner, map[string]any{"name": "reader", "permissions": []string{"templates:read"}})
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(*reader.creds())
	list := c.send("GET", "/console/templates", nil)
	if !strings.Contains(list.body, `<button type="button" disabled aria-describedby="new-template-why" id="new-template">`) ||
		!strings.Contains(list.body, "This key lacks the templates:create_update permission.") {
		t.Errorf("the list's New template:\n%s", list.body)
	}
	edit := c.send("GET", "/console/templates/"+made.ID, nil)
	for _, want := range []string{
		`id="save" disabled aria-describedby="save-why"`, `id="save-why">This key lacks the templates:create_update permission.`,
		`id="delete" disabled aria-describedby="delete-why"`, `id="delete-why">This key lacks the templates:delete permission.`,
		`id="sign" class="button-secondary" disabled aria-describedby="sign-why"`, `id="sign-why">This key lacks the images:create permission.`,
	} {
		if !strings.Contains(edit.body, want) {
			t.Errorf("the editor lacks %s", want)
		}
	}
	csrf := csrfOf(t, edit.body)
	for _, tc := range []struct{ path, what string }{
		{"/console/templates", "create"}, {"/console/templates/" + made.ID, "save"}, {"/console/templates/" + made.ID + "/restore", "restore"},
		{"/console/templates/" + made.ID + "/delete", "delete"}, {"/console/templates/" + made.ID + "/signed-url", "sign"},
	} {
		a := c.send("POST", tc.path, url.Values{"csrf": {csrf}, "name": {"Changed"}, "html": {"<p>changed</p>"}, "version": {"1"}})
		if a.status != http.StatusForbidden || signedURLOf.MatchString(a.body) {
			t.Errorf("%s: %d\n%s", tc.what, a.status, a.body)
		}
	}
	vs := templateVersions(t, o, made.ID)
	if len(vs) != 1 || vs[0]["name"] != "Kept" || vs[0]["html"] != "<p>{{x}}</p>" {
		t.Errorf("the template changed: %v", vs)
	}
	lr := o.do(t, apitest.Request{Method: "GET", Path: "/v1/template", Creds: &o.Owner})
	if n := len(lr.Object(t)["data"].([]any)); n != 1 {
		t.Errorf("%d templates, want 1", n)
	}
	none := &consoleClient{t: t, base: o.URL}
	none.signIn(*o.createKey(t, o.Owner, map[string]any{"name": "none", "permissions": []string{"usage:read"}}).creds())
	if a := none.send("GET", "/console/templates", nil); !strings.Contains(a.body, `id="templates-denied">This key lacks the templates:read permission.`) || strings.Contains(a.body, "Kept") {
		t.Errorf("a key without templates:read:\n%s", a.body)
	}
}

// TestHostileConsoleTemplateEscapes: a template's name, description,
// html and a variable's name holding markup show as text on every
// templates page.
func TestHostileConsoleTemplateEscapes(t *testing.T) {
	o := startOrigin(t)
	const evil = `<script>alert(1)</script>`
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{
		"name": evil, "description": evil + `"'`, "html": `<p>{{[<script>alert(3)</script>]}}</p></textarea><script>void 0</script>`}})
	apitest.WantStatus(t, r, 201)
	var made struct {
		ID string `json:"template_id"`
	}
	r.Decode(t, &made)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + made.ID, Creds: &o.Owner, JSON: map[string]any{"template_values": map[string]any{}}}), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + made.ID, Creds: &o.Owner, JSON: map[string]any{"name": "v2", "html": "<p>v2</p>"}}), 200)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	edit := c.send("GET", "/console/templates/"+made.ID, nil)
	csrf := csrfOf(t, edit.body)
	pages := map[string]consoleAnswer{
		"old":     c.send("GET", "/console/templates/"+made.ID+"?version=1", nil),
		"signed":  c.send("POST", "/console/templates/"+made.ID+"/signed-url", url.Values{"csrf": {csrf}, "name": {evil}, "template_values": {`{"<script>alert(5)</script>": "` + `</textarea><script>alert(6)</script>"}`}}),
		"refused": c.send("POST", "/console/templates/"+made.ID, url.Values{"csrf": {csrf}, "name": {evil + strings.Repeat("x", 64)}, "html": {"</textarea><script>alert(7)</script>"}}),
	}
	restore := c.send("POST", "/console/templates/"+made.ID+"/restore", url.Values{"csrf": {csrf}, "version": {"1"}})
	pages["restored"] = c.send("GET", restore.header.Get("Location"), nil)
	pages["list"] = c.send("GET", "/console/templates", nil)
	for name, p := range pages {
		if strings.Contains(p.body, "<script>") {
			t.Errorf("%s: markup from the template is markup in the page:\n%s", name, p.body)
		}
	}
	if !strings.Contains(pages["list"].body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the name is not shown as text in the list:\n%s", pages["list"].body)
	}
	if !strings.Contains(pages["restored"].body, `data-template-value="&lt;script&gt;alert(3)&lt;/script&gt;"`) ||
		!strings.Contains(pages["restored"].body, `<code>&lt;script&gt;alert(3)&lt;/script&gt;</code>`) {
		t.Errorf("the variable's name is not shown as text:\n%s", pages["restored"].body)
	}
	if got := formField(t, pages["old"].body, "old-html"); !strings.Contains(got, "</textarea><script>void 0</script>") {
		t.Errorf("the html shown is not the html saved: %q", got)
	}
	if got := formField(t, pages["restored"].body, "tpl-description"); got != evil+`"'` {
		t.Errorf("the description shown: %q", got)
	}
}

// TestConsoleTemplateValuesInABrowser: in Chromium, typing in a
// variable's field updates the values' JSON, and editing the JSON
// updates the fields (templates.js).
func TestConsoleTemplateValuesInABrowser(t *testing.T) {
	o := startOrigin(t)
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"name": "Card", "html": "<h1>{{title}}</h1><p>{{n}}</p>", "device_scale": 1, "headers": map[string]string{"X-A": "b"}}})
	apitest.WantStatus(t, r, 201)
	var made struct {
		ID string `json:"template_id"`
	}
	r.Decode(t, &made)
	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(o.URL+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`#api_id`)),
		chromedp.SendKeys(chromedp.CSS(`#api_id`), o.Owner.APIID),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), o.Owner.APIKey),
		chromedp.Submit(chromedp.CSS(`#api_key`)),
		chromedp.WaitVisible(chromedp.CSS(`#credits-used`)),
		chromedp.Navigate(o.URL+"/console/templates/"+made.ID),
		chromedp.WaitVisible(chromedp.CSS(`html[data-template-values-js] [data-template-value="title"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-template-value="title"]`), "Hi"),
	)
	if err != nil {
		t.Fatal(err)
	}
	values := func() map[string]any {
		t.Helper()
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#template-values").value`))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatalf("the JSON editor holds %q: %v", text, err)
		}
		return m
	}
	if v := values(); v["title"] != "Hi" || v["n"] != "" {
		t.Errorf("after typing in the title field: %v", v)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#template-values").value = ""`)); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#template-values`), `{"title": "From JSON", "n": 12}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	type fields struct{ Title, N, Status string }
	f, err := chromedp.Run(ctx, chromedp.Evaluate[fields](`({Title: document.querySelector('[data-template-value="title"]').value,
		N: document.querySelector('[data-template-value="n"]').value, Status: document.querySelector("[data-template-values-status]").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Title != "From JSON" || f.N != "12" || f.Status != "" {
		t.Errorf("after editing the JSON: %+v", f)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-template-value="n"]`), "3")); err != nil {
		t.Fatal(err)
	}
	if v := values(); v["n"] != "123" || v["title"] != "From JSON" {
		t.Errorf("after typing in the n field: %v", v)
	}

	// The editor and an old version, in both themes at a desk's width and
	// a phone's, as TestConsoleInABrowser looks at the other pages.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + made.ID, Creds: &o.Owner, JSON: map[string]any{"template_values": map[string]any{"title": "a"}}}), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + made.ID, Creds: &o.Owner, JSON: map[string]any{"name": "Card", "html": "<h1>{{title}}</h1>"}}), 200)
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int64{1024, 390} {
			for name, path := range map[string]string{"template-new": "/console/templates/new", "template-edit": "/console/templates/" + made.ID, "template-version": "/console/templates/" + made.ID + "?version=1"} {
				name := fmt.Sprintf("%s-%s-%d", name, scheme, width)
				if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(o.URL+path),
					chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] h1`))); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				lookAt(ctx, t, name)
			}
		}
	}
}
