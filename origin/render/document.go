package render

import (
	"net/url"
	"regexp"
	"strings"
)

// fullDocument matches an <html> or <body> tag of the caller's own.
var fullDocument = regexp.MustCompile(`(?i)<(html|body)[\s>/]`)

// IsSnippet reports whether html is a fragment rather than a whole document.
// Snippets are cropped to their content; whole documents use the viewport.
func IsSnippet(html string) bool { return !fullDocument.MatchString(html) }

var headClose = regexp.MustCompile(`(?i)</head\s*>`)
var htmlOpen = regexp.MustCompile(`(?i)<html[^>]*>`)

// buildDocument returns the HTML document a tab loads for r: the caller's
// HTML with the web fonts and CSS added to its head.
func buildDocument(r *Request, fontsURL string) string {
	var head strings.Builder
	if len(r.GoogleFonts) > 0 {
		head.WriteString(`<link rel="stylesheet" href="`)
		head.WriteString(htmlAttrEscape(FontsCSSURL(fontsURL, r.GoogleFonts)))
		head.WriteString(`">`)
	}
	if r.CSS != "" {
		head.WriteString("<style>")
		head.WriteString(r.CSS)
		head.WriteString("</style>")
	}
	if IsSnippet(r.HTML) {
		return `<!DOCTYPE html><html><head><meta charset="utf-8">` + head.String() + "</head><body>" + r.HTML + "</body></html>"
	}
	if head.Len() == 0 {
		return r.HTML
	}
	if loc := headClose.FindStringIndex(r.HTML); loc != nil {
		return r.HTML[:loc[0]] + head.String() + r.HTML[loc[0]:]
	}
	if loc := htmlOpen.FindStringIndex(r.HTML); loc != nil {
		return r.HTML[:loc[1]] + "<head>" + head.String() + "</head>" + r.HTML[loc[1]:]
	}
	return "<head>" + head.String() + "</head>" + r.HTML
}

// FontsCSSURL is the Google Fonts css2 address loading the families, with
// display=block so text waits for its font instead of painting a fallback.
func FontsCSSURL(base string, families []string) string {
	var q strings.Builder
	for _, f := range families {
		q.WriteString("family=")
		q.WriteString(fontsEscaper.Replace(url.QueryEscape(strings.TrimSpace(f))))
		q.WriteString("&")
	}
	q.WriteString("display=block")
	return strings.TrimRight(base, "/") + "/css2?" + q.String()
}

// fontsEscaper keeps the separators of css2 family specs readable.
var fontsEscaper = strings.NewReplacer("%3A", ":", "%3B", ";", "%40", "@", "%2C", ",")

func htmlAttrEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace(s)
}
