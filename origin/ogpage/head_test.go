package ogpage

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func parse(t *testing.T, doc, contentType string) (Head, bool) {
	t.Helper()
	h, ended, err := parseHead(strings.NewReader(doc), contentType)
	if err != nil {
		t.Fatalf("parseHead: %v", err)
	}
	return h, ended
}

// TestParseHeadMeta has a row per way a page writes its metadata.
func TestParseHeadMeta(t *testing.T) {
	for _, tc := range []struct {
		name        string
		doc         string
		contentType string
		want        Head
		wantEnded   bool
	}{
		{
			name: "named fields",
			doc: `<!doctype html><html><head><meta charset="utf-8"><title>Home</title>
				<meta name="description" content="About us">
				<meta property="og:title" content="OG home"><meta property="og:description" content="OG about">
				<meta property="og:url" content=" https://example.com/a "><meta property="og:site_name" content="Example">
				<meta property="og:image" content="/card.png">
				<meta name="twitter:title" content="TW home"><meta name="twitter:description" content="TW about">
				</head><body><p>x</p></body></html>`,
			want: Head{
				Title: "Home", Description: "About us", OGTitle: "OG home", OGDescription: "OG about",
				OGURL: "https://example.com/a", OGSiteName: "Example", OGImage: "/card.png",
				TwitterTitle: "TW home", TwitterDescription: "TW about",
				Meta: map[string]string{
					"description": "About us", "og:title": "OG home", "og:description": "OG about",
					"og:url": " https://example.com/a ", "og:site_name": "Example", "og:image": "/card.png",
					"twitter:title": "TW home", "twitter:description": "TW about",
				},
			},
			wantEnded: true,
		},
		{
			name: "property or name, any case",
			doc: `<head><META NAME="OG:Title" CONTENT="by name"><meta Property=" Twitter:Title " content="by property">
				<meta name="Author" content="Ann"></head>`,
			want: Head{
				OGTitle: "by name", TwitterTitle: "by property",
				Meta: map[string]string{"og:title": "by name", "twitter:title": "by property", "author": "Ann"},
			},
			wantEnded: true,
		},
		{
			name: "name and property on one meta count under each",
			doc:  `<head><meta name="description" property="og:description" content="both"></head>`,
			want: Head{
				Description: "both", OGDescription: "both",
				Meta: map[string]string{"description": "both", "og:description": "both"},
			},
			wantEnded: true,
		},
		{
			name: "entities decoded, whitespace of titles collapsed",
			doc: "<head><title>\n  Caf&eacute; &amp; \t Bar &#x2014; &lt;b&gt;  </title>" +
				`<meta property="og:title" content="  Tom &amp; Jerry&#39;s
				   show "><meta name="x" content="a &quot;b&quot; &nbsp;c"></head>`,
			want: Head{
				Title: "Café & Bar — <b>", OGTitle: "Tom & Jerry's show",
				Meta: map[string]string{"og:title": "  Tom & Jerry's\n\t\t\t\t   show ", "x": "a \"b\" \u00a0c"},
			},
			wantEnded: true,
		},
		{
			name: "first value of a key wins, first title wins",
			doc: `<head><title>one</title><title>two</title><meta property="og:title" content="first">
				<meta property="og:title" content="second"><meta name="OG:TITLE" content="third">
				<meta property="og:image" content="a.png"><meta property="og:image" content="b.png"></head>`,
			want: Head{
				Title: "one", OGTitle: "first", OGImage: "a.png",
				Meta: map[string]string{"og:title": "first", "og:image": "a.png"},
			},
			wantEnded: true,
		},
		{
			name:      "repeated attributes: the first counts",
			doc:       `<head><meta name="og:title" name="other" content="a" content="b"></head>`,
			want:      Head{OGTitle: "a", Meta: map[string]string{"og:title": "a"}},
			wantEnded: true,
		},
		{
			name:      "a meta without content or without a name is not kept",
			doc:       `<head><meta name="og:title"><meta content="orphan"><meta http-equiv="refresh" content="5"></head>`,
			want:      Head{},
			wantEnded: true,
		},
		{
			name:      "meta after </head> is not the head's",
			doc:       `<html><head><title>t</title></head><meta property="og:title" content="late"><body></body>`,
			want:      Head{Title: "t"},
			wantEnded: true,
		},
		{
			name:      "meta in the body is not the head's",
			doc:       `<html><head></head><body><meta property="og:title" content="body"></body></html>`,
			want:      Head{},
			wantEnded: true,
		},
		{
			name:      "an element that cannot be in a head opens the body",
			doc:       `<title>t</title><meta name="a" content="1"><div><meta name="b" content="2"></div>`,
			want:      Head{Title: "t", Meta: map[string]string{"a": "1"}},
			wantEnded: true,
		},
		{
			name: "script, style, noscript and template contents are not metadata",
			doc: `<head><script>document.write('<meta name="s" content="1">')</script>
				<style>/* <meta name="c" content="1"> */</style>
				<noscript><meta name="n" content="1"><img src="pixel"></noscript>
				<template><meta name="t" content="1"><div></div><template></template><meta name="t2" content="1"></template>
				<!-- <meta name="comment" content="1"> -->
				<meta name="after" content="kept"></head>`,
			want:      Head{Meta: map[string]string{"after": "kept"}},
			wantEnded: true,
		},
		{
			name:      "stray text in the head is skipped",
			doc:       `<head><meta name="a" content="1">}}&nbsp;<meta name="b" content="2"></head>`,
			want:      Head{Meta: map[string]string{"a": "1", "b": "2"}},
			wantEnded: true,
		},
		{
			name:      "a head that never ends is read to the end of the input",
			doc:       `<html><head><title>open`,
			want:      Head{Title: "open"},
			wantEnded: false,
		},
		{
			name:        "windows-1252 from the Content-Type",
			doc:         "<head><title>Caf\xe9</title></head>",
			contentType: "text/html; charset=windows-1252",
			want:        Head{Title: "Café"},
			wantEnded:   true,
		},
		{
			name:        "Shift_JIS from a meta charset",
			doc:         "<head><meta charset=\"shift_jis\"><title>\x93\xfa\x96\x7b</title></head>",
			contentType: "text/html",
			want:        Head{Title: "日本"},
			wantEnded:   true,
		},
		{
			name:        "UTF-8 without a declaration, past an ASCII first KiB",
			doc:         "<head><!--" + strings.Repeat("x", 2000) + "--><title>Café ☕</title></head>",
			contentType: "text/html",
			want:        Head{Title: "Café ☕"},
			wantEnded:   true,
		},
		{
			name:        "windows-1252 without a declaration, when the first KiB is not UTF-8",
			doc:         "<head><title>Caf\xe9</title></head>",
			contentType: "text/html",
			want:        Head{Title: "Café"},
			wantEnded:   true,
		},
		{
			name:        "a UTF-8 rune cut at the end of the first KiB",
			doc:         "<head><!--" + strings.Repeat("x", 1024-len("<head><!--")-1) + "é--><title>é</title></head>",
			contentType: "text/html",
			want:        Head{Title: "é"},
			wantEnded:   true,
		},
		{
			name:      "invalid UTF-8 is replaced",
			doc:       "<head><meta charset=utf-8><title>a\xffb</title></head>",
			want:      Head{Title: "a\uFFFDb"},
			wantEnded: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ended := parse(t, tc.doc, tc.contentType)
			if ended != tc.wantEnded {
				t.Errorf("ended = %v, want %v", ended, tc.wantEnded)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("head:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestParseHeadInstructions covers hcti:/pictor: overrides and html:tv:
// template values.
func TestParseHeadInstructions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		metas       string
		wantOver    map[string]string
		wantVersion *int64
		wantValues  map[string]string // JSON text
		wantIgnored []Ignored
	}{
		{
			name: "valid overrides under both prefixes and both attributes",
			metas: `<meta name="hcti:selector" content="#card"><meta property="pictor:ms_delay" content="500">
				<meta name="HCTI:Viewport_Width" content="800"><meta name="hcti:color_scheme" content="Dark">
				<meta name="hcti:render_when_ready" content="true"><meta name="hcti:device_scale" content="2">
				<meta name="hcti:timezone" content="Europe/Paris"><meta name="hcti:css" content="body{margin:0}">
				<meta name="hcti:media_type" content="print"><meta name="hcti:max_wait_ms" content="5000">
				<meta name="hcti:transparent_background" content="1"><meta name="hcti:block_consent_banners" content="false">
				<meta name="hcti:viewport_height" content="600">`,
			wantOver: map[string]string{
				"selector": "#card", "ms_delay": "500", "viewport_width": "800", "color_scheme": "Dark",
				"render_when_ready": "true", "device_scale": "2", "timezone": "Europe/Paris", "css": "body{margin:0}",
				"media_type": "print", "max_wait_ms": "5000", "transparent_background": "1",
				"block_consent_banners": "false", "viewport_height": "600",
			},
		},
		{
			name: "unknown parameters and invalid values are ignored and reported",
			metas: `<meta name="hcti:format" content="jpg"><meta name="hcti:ms_delay" content="soon">
				<meta name="hcti:viewport_width" content="90000"><meta name="hcti:color_scheme" content="sepia">
				<meta name="hcti:timezone" content="Mars/Olympus"><meta name="hcti:selector" content="  ">
				<meta name="hcti:device_scale" content="7"><meta name="hcti:render_when_ready" content="maybe">
				<meta name="pictor:css"><meta name="hcti:" content="x">`,
			wantIgnored: []Ignored{
				{"hcti:format", "is not a parameter a page may override"},
				{"hcti:ms_delay", "must be a number"},
				{"hcti:viewport_width", "must be between 1 and 6000"},
				{"hcti:color_scheme", "must be one of light, dark"},
				{"hcti:timezone", "must be an IANA timezone name such as Europe/Paris"},
				{"hcti:selector", "is empty"},
				{"hcti:device_scale", "must be between 0.1 and 3"},
				{"hcti:render_when_ready", "must be a boolean"},
				{"pictor:css", "has no content attribute"},
				{"hcti:", "is not a parameter a page may override"},
			},
		},
		{
			name:     "the first meta naming a parameter decides, under either prefix",
			metas:    `<meta name="pictor:ms_delay" content="100"><meta name="hcti:ms_delay" content="200"><meta name="hcti:css" content="x{}"><meta name="hcti:css" content="y{}">`,
			wantOver: map[string]string{"ms_delay": "100", "css": "x{}"},
			wantIgnored: []Ignored{
				{"hcti:ms_delay", "is set more than once; the first one is used"},
				{"hcti:css", "is set more than once; the first one is used"},
			},
		},
		{
			name:  "an invalid first value is not replaced by a later one",
			metas: `<meta name="hcti:ms_delay" content="-1"><meta name="pictor:ms_delay" content="10">`,
			wantIgnored: []Ignored{
				{"hcti:ms_delay", "must be between 0 and 10000"},
				{"pictor:ms_delay", "is set more than once; the first one is used"},
			},
		},
		{
			name:        "content_version",
			metas:       `<meta name="hcti:content_version" content=" 42 ">`,
			wantOver:    map[string]string{"content_version": " 42 "},
			wantVersion: new(int64(42)),
		},
		{
			name:        "content_version that is not an integer",
			metas:       `<meta name="hcti:content_version" content="4.2">`,
			wantIgnored: []Ignored{{"hcti:content_version", "must be an integer"}},
		},
		{
			name: "template values: JSON when valid, else the string; the variable's case is kept",
			metas: `<meta name="html:tv:price" content="42"><meta name="HTML:TV:userName" content="Ann">
				<meta property="html:tv:tags" content='["a","b"]'><meta name="html:tv:obj" content='{"k": {"n": null}}'>
				<meta name="html:tv:quoted" content='"hi"'><meta name="html:tv:flag" content="true">
				<meta name="html:tv:broken" content='{"k":'><meta name="html:tv:empty" content="">
				<meta name="html:tv:price" content="43"><meta name="html:tv:" content="x">`,
			wantValues: map[string]string{
				"price": `42`, "userName": `"Ann"`, "tags": `["a","b"]`, "obj": `{"k": {"n": null}}`,
				"quoted": `"hi"`, "flag": `true`, "broken": `"{\"k\":"`, "empty": `""`,
			},
			wantIgnored: []Ignored{
				{"html:tv:price", "is set more than once; the first one is used"},
				{"html:tv:", "names no template variable"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := parse(t, "<head>"+tc.metas+"</head>", "")
			if !reflect.DeepEqual(h.Overrides, tc.wantOver) {
				t.Errorf("Overrides = %v, want %v", h.Overrides, tc.wantOver)
			}
			if !reflect.DeepEqual(h.ContentVersion, tc.wantVersion) {
				t.Errorf("ContentVersion = %v, want %v", h.ContentVersion, tc.wantVersion)
			}
			var values map[string]string
			for k, v := range h.TemplateValues {
				if !json.Valid(v) {
					t.Errorf("TemplateValues[%q] = %s is not JSON", k, v)
				}
				if values == nil {
					values = map[string]string{}
				}
				values[k] = string(v)
			}
			if !reflect.DeepEqual(values, tc.wantValues) {
				t.Errorf("TemplateValues = %v, want %v", values, tc.wantValues)
			}
			if !reflect.DeepEqual(h.Ignored, tc.wantIgnored) {
				t.Errorf("Ignored:\n got %q\nwant %q", h.Ignored, tc.wantIgnored)
			}
		})
	}
}

// TestParseHeadBounds shows that a page cannot make a head hold without
// bound.
func TestParseHeadBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("<head>")
	for i := range 3000 {
		b.WriteString(`<meta name="k` + strconv.Itoa(i) + `" content="v"><meta name="hcti:nope` + strconv.Itoa(i) + `" content="v">`)
	}
	b.WriteString(`<meta property="og:title" content="named ones stay"></head>`)
	h, _ := parse(t, b.String(), "")
	if len(h.Meta) != maxMeta+1 {
		t.Errorf("len(Meta) = %d, want %d", len(h.Meta), maxMeta+1)
	}
	if h.OGTitle != "named ones stay" {
		t.Errorf("OGTitle = %q", h.OGTitle)
	}
	if len(h.Ignored) != maxIgnored || h.IgnoredMore == 0 {
		t.Errorf("len(Ignored) = %d, IgnoredMore = %d; want %d and more", len(h.Ignored), h.IgnoredMore, maxIgnored)
	}
}

func TestFallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		head Head
		kind string
		want string
	}{
		{"titles prefer og:title", Head{OGTitle: "og", TwitterTitle: "tw", Title: "t"}, FallbackTitles, "og"},
		{"titles then twitter:title", Head{TwitterTitle: "tw", Title: "t"}, FallbackTitles, "tw"},
		{"titles then <title>", Head{Title: "t", Description: "d"}, FallbackTitles, "t"},
		{"descriptions prefer og:description", Head{OGDescription: "og", TwitterDescription: "tw", Description: "d"}, FallbackDescriptions, "og"},
		{"descriptions then twitter:description", Head{TwitterDescription: "tw", Description: "d"}, FallbackDescriptions, "tw"},
		{"descriptions then meta description", Head{Description: "d", Title: "t"}, FallbackDescriptions, "d"},
		{"none", Head{}, FallbackTitles, ""},
		{"unknown kind", Head{Title: "t"}, "images", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.head.Fallback(tc.kind); got != tc.want {
				t.Errorf("Fallback(%q) = %q, want %q", tc.kind, got, tc.want)
			}
		})
	}
}
