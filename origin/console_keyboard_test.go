package origin_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestConsoleKeyboard: a person with a keyboard alone signs in, and on
// every page reaches each control with Tab, in order, each showing where
// the focus is.
func TestConsoleKeyboard(t *testing.T) {
	o := startOrigin(t)
	var img struct{ ID string }
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": "<p>a card</p>"}})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &img)
	var tpl struct {
		TemplateID string `json:"template_id"`
	}
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"name": "Card", "html": "<p>{{title}}</p>"}})
	apitest.WantStatus(t, r, http.StatusCreated)
	r.Decode(t, &tpl)
	site := newSite(t, map[string]string{"/": doc("<title>Home</title><p>home</p>")})
	cfg, _ := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": site.URL, "optimization_mode": "post_process"})
	// Every page of the browser test, and the pages behind a record.
	pages := append(slices.Clone(browsedPages), "/console/images/"+img.ID, "/console/templates/new", "/console/templates/"+tpl.TemplateID, "/console/og/"+cfg+"/preview?path=/")
	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()

	// Sign in: Tab from the top of the page reaches the skip link first,
	// then the fields; Enter sends the form.
	if err := chromedp.Do(ctx, chromedp.Navigate(o.URL+"/console"), chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] #api_id`))); err != nil {
		t.Fatal(err)
	}
	focused := func() string {
		t.Helper()
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(e => e.id || e.className || e.tagName.toLowerCase())(document.activeElement)`))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var path []string
	for range 3 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		path = append(path, focused())
	}
	if strings.Join(path, " ") != "skip-link nav-brand api_id" {
		t.Fatalf("Tab from the top goes through %v", path)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(o.Owner.APIID), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(o.Owner.APIKey), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#credits-used`))); err != nil {
		t.Fatalf("sign in with the keyboard: %v", err)
	}

	for _, page := range pages {
		if err := chromedp.Do(ctx, chromedp.Navigate(o.URL+page), chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] h1`))); err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		// Number the controls a keyboard should reach, in document order
		// (not those folded in a closed <details>).
		want, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
			const all = [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, [tabindex]')]
				.filter(e => !e.disabled && e.tabIndex >= 0 && e.getClientRects().length > 0 && getComputedStyle(e).visibility != "hidden")
				.filter(e => !(e.closest("details:not([open])") && e.tagName != "SUMMARY")); // folded: its summary opens it
			all.forEach((e, i) => e.dataset.kbd = String(i));
			document.activeElement.blur();
			return all.length;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		var order []int
		unseen := map[int]bool{}
		for i := range want {
			unseen[i] = true
		}
		for range want + 1 {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
				t.Fatal(err)
			}
			type at struct {
				Index   string
				Outline string
				Shadow  string
				Tag     string
			}
			a, err := chromedp.Run(ctx, chromedp.Evaluate[at](`(e => ({Index: e.dataset.kbd || "", Tag: e.tagName.toLowerCase() + (e.id ? "#" + e.id : ""),
				Outline: getComputedStyle(e).outlineStyle, Shadow: getComputedStyle(e).boxShadow}))(document.activeElement)`))
			if err != nil {
				t.Fatal(err)
			}
			if a.Index == "" {
				continue // the page's end, or a control made after the count
			}
			n := 0
			for _, c := range a.Index {
				n = n*10 + int(c-'0')
			}
			if a.Outline == "none" && (a.Shadow == "none" || a.Shadow == "") {
				t.Errorf("%s: the focus on %s does not show", page, a.Tag)
			}
			order = append(order, n)
			delete(unseen, n)
		}
		t.Logf("%s: %d controls, order %v", page, want, order)
		if len(unseen) > 0 {
			t.Errorf("%s: Tab never reaches %d of %d controls (numbers %v)", page, len(unseen), want, unseen)
		}
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] && order[i] != 0 {
				t.Errorf("%s: Tab goes back from control %d to %d: %v", page, order[i-1], order[i], order)
				break
			}
		}
	}
}
