package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/contract/apidocs"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/openapi"
)

// TestDocsPageInChromium loads the reference page from an edge in headless
// Chromium, with the page's CSP in force and a proxy that refuses every
// connection (loopback is reached directly): Redoc renders every operation
// of the embedded OpenAPI document, shows the JSON request sample of each
// operation that takes a JSON body (the image creation's among them), and
// searches (in its blob worker); no request leaves for another host, the
// page reports no CSP violation and no error, and nothing reaches the
// origin. What it looks for comes from the document itself.
func TestDocsPageInChromium(t *testing.T) {
	o := newStrictOrigin(t)
	base := startEdge(t, newTunedEdge(t, o.URL, nil))
	tab := newChromiumTab(t, chromedp.WindowSize(1280, 900), chromedp.ProxyServer("http://"+apitest.ClosedAddr(t)))
	rec := recordPage(t, tab)
	checked := checkDocsPage(t, tab, rec, base, openapi.JSON())
	if !slices.Contains(checked, "POST /v1/image") {
		t.Errorf("the request sample of POST /v1/image was not checked (checked: %q)", checked)
	}
	if got := o.requests(); len(got) > 0 {
		t.Fatalf("the origin was asked for %q", got)
	}
}

// newChromiumTab starts headless Chromium ($PICTOR_CHROMIUM, else Debian's)
// for one test and returns a tab; the browser stops when the test ends. It
// is origin/chromiumtest.NewTab, which the edge may not import (the tiers
// share only origin/contract: TestImportsOnlyTheContract).
func newChromiumTab(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := os.Getenv("PICTOR_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("chromium: %v (make test installs it)", err)
	}
	dir := t.TempDir() // removed after the browser exited: cleanups run last-in first-out
	// The full browser keeps a directory for its process singleton under
	// TMPDIR, left behind when it is killed at the test's end: a short
	// one of the test's own (a socket's path holds at most 107 bytes).
	tmp, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.Env("TMPDIR="+tmp),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	allocCtx, allocCancel := chromedp.NewExecAllocator(ctx, append(opts, extra...)...)
	t.Cleanup(allocCancel)
	tab, tabCancel := chromedp.NewContext(allocCtx)
	t.Cleanup(tabCancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}

// pageRecord is what the tab reported: the requests it sent, the answers
// that failed, CSP violations, uncaught exceptions and console errors, in
// the order the browser sent them.
type pageRecord struct {
	mu sync.Mutex
	pageEvents
}

type pageEvents struct {
	requests   []string
	failed     []string // answers of 400 and above, loads that failed
	violations []string
	exceptions []string
	console    []string
}

// recordPage starts recording the tab's events, and a listener in every
// document it loads for securitypolicyviolation events (scripts added by
// the DevTools protocol run whatever the page's CSP says).
func recordPage(t *testing.T, tab context.Context) *pageRecord {
	t.Helper()
	rec := &pageRecord{}
	err := chromedp.Listen(tab, func(ev any) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			rec.requests = append(rec.requests, ev.Request.URL)
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				rec.failed = append(rec.failed, fmt.Sprintf("%d %s", ev.Response.Status, ev.Response.URL))
			}
		case *network.EventLoadingFailed:
			if ev.BlockedReason == network.BlockedReasonCsp {
				rec.violations = append(rec.violations, "blocked load: "+string(ev.RequestID))
			} else if !ev.Canceled {
				rec.failed = append(rec.failed, string(ev.RequestID)+": "+ev.ErrorText)
			}
		case *log.EventEntryAdded:
			if strings.Contains(ev.Entry.Text, "Content Security Policy") {
				rec.violations = append(rec.violations, ev.Entry.Text)
			} else {
				rec.console = append(rec.console, string(ev.Entry.Level)+": "+ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text = d.Exception.Description
			}
			rec.exceptions = append(rec.exceptions, fmt.Sprintf("%s:%d %s", d.URL, d.LineNumber+1, text))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				rec.console = append(rec.console, string(ev.Type)+": "+strings.Join(args, " "))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
		window.__cspViolations = [];
		window.__errors = [];
		document.addEventListener("securitypolicyviolation", e =>
			window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI + " at " + e.sourceFile + ":" + e.lineNumber));
		window.addEventListener("error", e => window.__errors.push(String(e.message)));
		window.addEventListener("unhandledrejection", e => window.__errors.push(String(e.reason)));`})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (r *pageRecord) snapshot() pageEvents {
	r.mu.Lock()
	defer r.mu.Unlock()
	return pageEvents{requests: slices.Clone(r.requests), failed: slices.Clone(r.failed), violations: slices.Clone(r.violations),
		exceptions: slices.Clone(r.exceptions), console: slices.Clone(r.console)}
}

// docOperation is an operation of the document, as the page should show it.
type docOperation struct {
	Route       string // "POST /v1/image"
	ID, Summary string
	// Body is set for a JSON request body: the sample must be one of its
	// Examples (the media type's, else its schema's) if it has any, else
	// hold its Required properties.
	Body     bool
	Examples []any
	Required []string
}

// operationsOf reads the operations of an OpenAPI document.
func operationsOf(t *testing.T, doc []byte) []docOperation {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	// resolve follows a local $ref.
	resolve := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		for range 10 {
			ref, ok := m["$ref"].(string)
			if !ok {
				break
			}
			var cur any = root
			for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
				part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
				cm, _ := cur.(map[string]any)
				cur = cm[part]
			}
			m, _ = cur.(map[string]any)
		}
		return m
	}
	var ops []docOperation
	paths, _ := root["paths"].(map[string]any)
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item := resolve(paths[p])
		for _, method := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
			op := resolve(item[method])
			if op == nil {
				continue
			}
			o := docOperation{Route: strings.ToUpper(method) + " " + p}
			o.ID, _ = op["operationId"].(string)
			o.Summary, _ = op["summary"].(string)
			if o.Summary == "" {
				o.Summary = o.ID
			}
			content, _ := resolve(op["requestBody"])["content"].(map[string]any)
			for mt, v := range content {
				if base, _, _ := strings.Cut(mt, ";"); base != "application/json" && !strings.HasSuffix(base, "+json") {
					continue
				}
				media := resolve(v)
				o.Body = true
				if ex, ok := media["example"]; ok {
					o.Examples = append(o.Examples, ex)
				}
				examples, _ := media["examples"].(map[string]any)
				for _, ex := range examples {
					if v, ok := resolve(ex)["value"]; ok {
						o.Examples = append(o.Examples, v)
					}
				}
				schema := resolve(media["schema"])
				if len(o.Examples) == 0 { // Redoc samples the schema's own example
					o.Examples = append(o.Examples, asSlice(schema["examples"])...)
					if ex, ok := schema["example"]; ok {
						o.Examples = append(o.Examples, ex)
					}
				}
				for _, part := range append([]any{schema}, asSlice(schema["allOf"])...) {
					for _, r := range asSlice(resolve(part)["required"]) {
						if s, ok := r.(string); ok {
							o.Required = append(o.Required, s)
						}
					}
				}
				break
			}
			ops = append(ops, o)
		}
	}
	if len(ops) == 0 {
		t.Fatal("the document has no operation")
	}
	return ops
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// pageHelpers are the page functions the waits and reads use. findOperation
// is the element of the operation whose operationId is id (Redoc's ids end
// in "operation/<operationId>").
const pageHelpers = `const findOperation = (id) => {
	const exact = document.getElementById("operation/" + id);
	if (exact) return exact;
	for (const el of document.querySelectorAll("[id]")) if (el.id.endsWith("/operation/" + id)) return el;
	return null;
};
// failed tells that the page reported a CSP violation or an error: the
// waits end then, and the checks after them say what went wrong.
const failed = () => window.__cspViolations.length > 0 || window.__errors.length > 0;
// requestSample is the JSON of the operation's request sample, or null.
const requestSample = (op) => {
	for (const h of op.querySelectorAll("h3")) {
		if (h.textContent.trim() !== "Request samples") continue;
		const json = h.parentElement.querySelector(".redoc-json");
		return json ? json.textContent : null;
	}
	return null;
};`

// checkDocsPage loads base's /docs in the tab and checks it renders doc.
// It returns the routes whose request samples it checked.
func checkDocsPage(t *testing.T, tab context.Context, rec *pageRecord, base string, doc []byte) (checked []string) {
	t.Helper()
	ops := operationsOf(t, doc)
	var ids, summaries, withBody []string
	for _, o := range ops {
		if o.ID != "" {
			ids = append(ids, o.ID)
			if o.Body {
				withBody = append(withBody, o.ID)
			}
		}
		if o.Summary != "" {
			summaries = append(summaries, o.Summary)
		}
	}
	if err := chromedp.Do(tab, chromedp.Navigate(base+apidocs.PagePath)); err != nil {
		t.Fatal(err)
	}
	// Redoc fetches the document and renders it: wait until every
	// operation, its summary and its request sample are in the page.
	_, err := chromedp.Run(tab, chromedp.PollFunction[bool](`(ids, summaries, withBody) => {
		`+pageHelpers+`
		if (failed()) return true;
		const text = document.body.textContent;
		return ids.every(id => findOperation(id) !== null) &&
			summaries.every(s => text.includes(s)) &&
			withBody.every(id => requestSample(findOperation(id)) !== null);
	}`, chromedp.WithPollingArgs(ids, summaries, withBody)))
	if err != nil {
		t.Fatalf("waiting for the %d operations %q to render: %v (recorded: %+v)", len(ids), summaries, err, rec.snapshot())
	}
	wantNoFailure(t, tab, rec)

	samples, err := chromedp.Run(tab, chromedp.Evaluate[map[string]string](`((withBody) => {
		`+pageHelpers+`
		return Object.fromEntries(withBody.map(id => [id, requestSample(findOperation(id))]));
	})(`+mustJSON(t, withBody)+`)`))
	if err != nil {
		t.Fatal(err)
	}
	var exact int
	for _, o := range ops {
		if !o.Body || o.ID == "" {
			continue
		}
		checked = append(checked, o.Route)
		var got any
		if err := json.Unmarshal([]byte(samples[o.ID]), &got); err != nil {
			t.Errorf("%s: the request sample on the page is not JSON: %v\n%s", o.ID, err, samples[o.ID])
			continue
		}
		if len(o.Examples) > 0 {
			if !slices.ContainsFunc(o.Examples, func(ex any) bool { return reflect.DeepEqual(ex, got) }) {
				t.Errorf("%s: the request sample on the page is %s, not the document's example", o.ID, samples[o.ID])
			}
			exact++
			continue
		}
		obj, _ := got.(map[string]any)
		for _, k := range o.Required {
			if _, ok := obj[k]; !ok {
				t.Errorf("%s: the request sample on the page lacks the required %q: %s", o.ID, k, samples[o.ID])
			}
		}
	}

	t.Logf("%d operations rendered; %d JSON request samples read, %d of them the document's own example", len(ops), len(withBody), exact)

	// Search runs in Redoc's worker, made from a blob.
	query := ops[0].Summary
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`[role="search"] input`), query)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.PollFunction[bool](`(q) => {
		`+pageHelpers+`
		if (failed()) return true;
		const r = document.querySelector('[data-role="search:results"]');
		return r !== null && r.textContent.includes(q);
	}`, chromedp.WithPollingArgs(query))); err != nil {
		t.Fatalf("searching for %q: %v", query, err)
	}

	got := wantNoFailure(t, tab, rec)
	if len(got.console) > 0 {
		t.Logf("console: %q", got.console)
	}
	self, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]bool{}
	for _, r := range got.requests {
		u, err := url.Parse(r)
		if err != nil {
			t.Errorf("request for %q: %v", r, err)
			continue
		}
		switch u.Scheme {
		case "data", "blob":
		case "http", "https":
			if u.Host != self.Host {
				t.Errorf("the page sent a request to %s, not to the edge (%s)", r, self.Host)
			}
			loaded[u.Path] = true
		default:
			t.Errorf("the page sent a request to %s", r)
		}
	}
	for _, p := range []string{apidocs.PagePath, apidocs.ScriptPath, apidocs.StylePath, "/v1/openapi.json"} {
		if !loaded[p] {
			t.Errorf("the page did not load %s (requests: %q)", p, got.requests)
		}
	}
	return checked
}

// wantNoFailure fails the test, at once, for CSP violations or errors the
// page or the browser reported, and returns the record. Whatever the tab
// sent before the reply to the evaluation has been recorded.
func wantNoFailure(t *testing.T, tab context.Context, rec *pageRecord) pageEvents {
	t.Helper()
	type report struct{ Violations, Errors []string }
	r, err := chromedp.Run(tab, chromedp.Evaluate[report](`({Violations: window.__cspViolations, Errors: window.__errors})`))
	if err != nil {
		t.Fatal(err)
	}
	got := rec.snapshot()
	if v := append(r.Violations, got.violations...); len(v) > 0 {
		t.Fatalf("CSP violations: %q", v)
	}
	if e := append(r.Errors, got.exceptions...); len(e) > 0 {
		t.Fatalf("errors: %q (console: %q)", e, got.console)
	}
	if len(got.failed) > 0 {
		t.Fatalf("failed loads: %q", got.failed)
	}
	return got
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
