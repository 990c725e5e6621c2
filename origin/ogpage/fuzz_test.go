package ogpage

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseHead feeds the head parser any bytes under any Content-Type: it
// must not panic, must keep its bounds, and what it keeps must be in
// proportion to what it read.
func FuzzParseHead(f *testing.F) {
	seeds := []struct{ doc, contentType string }{
		{simplePage, "text/html"},
		{`<head><title> a  b </title><meta property="og:title" name="twitter:title" content="x &amp; y"></head>`, ""},
		{`<meta name="hcti:ms_delay" content="5"><meta name="pictor:viewport_width" content="800"><meta name="hcti:content_version" content="9"><div>`, "text/html"},
		{`<head><meta name="html:tv:a" content='{"b":[1,2,{"c":null}]}'><meta name="html:tv:B" content="text"></head>`, ""},
		{"<head><meta charset=shift_jis><title>\x93\xfa\x96\x7b</title>", "text/html"},
		{"\xef\xbb\xbf<title>bom</title>", ""},
		{"\xff\xfe<\x00t\x00i\x00t\x00l\x00e\x00>\x00x\x00", ""},
		{"<title>caf\xe9</title>", "text/html; charset=iso-8859-1"},
		{`<template><meta name="t" content="1"><template></template></template><noscript><meta name="n" content="1"></noscript><script>"<meta>"</script>`, ""},
		{`<head><title/>x</title><meta name="a" name="b" property="c" content="1" content="2"/></head><meta name="late" content="1">`, ""},
		{`<head><meta name="hcti:css" content=""><meta name="hcti:nope" content="1"><meta name="html:tv:" content="1">`, ""},
		{"<ti" + "tle>" + strings.Repeat("&amp;", 50) + "<meta", "text/html"},
		{"", ""},
	}
	for _, s := range seeds {
		f.Add([]byte(s.doc), s.contentType)
	}
	f.Fuzz(func(t *testing.T, doc []byte, contentType string) {
		h, _, err := parseHead(bytes.NewReader(doc), contentType)
		if err != nil {
			t.Fatalf("parseHead of an in-memory document: %v", err)
		}
		size := 0
		check := func(what, s string) {
			size += len(s)
			if !utf8.ValidString(s) {
				t.Errorf("%s %q is not valid UTF-8", what, s)
			}
		}
		for _, s := range []string{h.Title, h.Description, h.OGTitle, h.OGDescription, h.OGSiteName, h.TwitterTitle, h.TwitterDescription} {
			check("text field", s)
			if s != collapse(s) {
				t.Errorf("text field %q is not collapsed", s)
			}
		}
		check("og:url", h.OGURL)
		check("og:image", h.OGImage)
		if len(h.Meta) > maxMeta+len(namedMeta) {
			t.Errorf("len(Meta) = %d", len(h.Meta))
		}
		for k, v := range h.Meta {
			check("meta key", k)
			check("meta value", v)
			if k != strings.ToLower(k) || k == "" {
				t.Errorf("meta key %q is not lower-cased", k)
			}
		}
		for k, v := range h.Overrides {
			check("override", v)
			if !slices.Contains(overrideParams, k) {
				t.Errorf("override %q is not a parameter", k)
			}
		}
		if (h.ContentVersion != nil) != (h.Overrides["content_version"] != "") {
			t.Errorf("ContentVersion %v with override %q", h.ContentVersion, h.Overrides["content_version"])
		}
		if len(h.TemplateValues) > maxTemplateValues {
			t.Errorf("len(TemplateValues) = %d", len(h.TemplateValues))
		}
		for k, v := range h.TemplateValues {
			check("template variable", k)
			size += len(v)
			if !json.Valid(v) {
				t.Errorf("template value %q = %s is not JSON", k, v)
			}
		}
		if len(h.Ignored) > maxIgnored || (h.IgnoredMore > 0 && len(h.Ignored) != maxIgnored) {
			t.Errorf("len(Ignored) = %d, IgnoredMore = %d", len(h.Ignored), h.IgnoredMore)
		}
		for _, ig := range h.Ignored {
			check("ignored key", ig.Key)
			if len(ig.Key) > maxReportedKey {
				t.Errorf("ignored key of %d bytes", len(ig.Key))
			}
		}
		// A byte becomes at most 3 in UTF-8, a meta value is kept under two
		// keys and in a template value (where escaping makes a character
		// at most 6 bytes): the output stays in proportion to the input.
		if limit := 64*len(doc) + 1<<16; size > limit {
			t.Errorf("kept %d bytes from a %d-byte document", size, len(doc))
		}
	})
}
