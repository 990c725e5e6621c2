package openapi

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pictorhq/pictor/origin/contract/ogplatform"
	"github.com/pictorhq/pictor/origin/ogconfig"
)

// A preview of one OG page: what its head says and the card each
// crawler's platform gets.

const (
	schOGPreview  = "OGPreview"
	schOGMetadata = "OGPageMetadata"
)

func (s *spec) defineOGPreview() {
	s.schema(schOGMetadata, object("What the page's <head> says of itself, whitespace collapsed; \"\" for what it does not say.",
		req("title", str("The first <title>.")),
		req("description", str("The description meta.")),
		req("og_title", str("og:title.")),
		req("og_description", str("og:description.")),
		req("og_site_name", str("og:site_name.")),
		req("og_url", str("og:url, as written.")),
		req("og_image", str("og:image, as written: the page's own image, which the <meta> tags of the OG image URL replace.")),
		req("twitter_title", str("twitter:title.")),
		req("twitter_description", str("twitter:description.")),
	))
	names := make([]string, 0, len(ogplatform.All))
	for _, p := range ogplatform.All {
		names = append(names, p.Name)
	}
	card := object("What one crawler's platform gets.",
		req("platform", enum("The platform (default: every other client).", names...)),
		req("width", integer(1, 4096, "The width the platform shows a card at, in pixels: the image's with optimization_mode set_viewport or post_process (times device_scale); with no_optimization every platform gets the configuration's one image.")),
		req("height", integer(1, 4096, "The height, as width.")),
		req("user_agent", str("A User-Agent the platform's crawler sends: GET url with it to get that platform's card.")),
	)
	ignored := object("A meta of the page that was not used.",
		req("key", str("The meta's name, lower-cased.")),
		req("reason", str("Why it was not used.")),
	)
	values := typed(openapi3.TypeObject, "The page's html:tv: template values, by variable: JSON values.")
	values.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(true)}
	s.schema(schOGPreview, withExamples(object("The page as it was read now.",
		req("path", str("The page's path, normalised.")),
		req("page_url", uri("The page read: base_url and the path.")),
		req("url", uri("The page's OG image URL, for og:image and twitter:image: each crawler that asks gets its platform's card.")),
		req("optimization_mode", enum("The configuration's optimization_mode.", string(ogconfig.NoOptimization), string(ogconfig.PostProcess), string(ogconfig.SetViewport))),
		reqRef("metadata", s.ref(schOGMetadata)),
		req("overrides", stringMap("The page's valid render overrides (hcti:<param> or pictor:<param> metas), raw as written; they count only with extract_values.")),
		req("template_values", values),
		req("ignored", array("The page's metas that were not used (unknown or invalid overrides, repeats, past the bounds): the first 100.", ignored)),
		req("ignored_more", count("How many more were not used.")),
		req("cards", array("The card of each platform, the default first.", card)),
	), map[string]any{"path": "/blog/post-1", "page_url": "https://www.example.com/blog/post-1",
		"url": "https://img.example.com/v1/og/abcdefghijklmnopqrstuvwxyz/blog/post-1", "optimization_mode": "set_viewport",
		"metadata": map[string]any{"title": "Post 1", "description": "The first post", "og_title": "Post 1", "og_description": "", "og_site_name": "Example",
			"og_url": "", "og_image": "", "twitter_title": "", "twitter_description": ""},
		"overrides": map[string]any{"ms_delay": "200"}, "template_values": map[string]any{}, "ignored": []any{}, "ignored_more": 0,
		"cards": []any{map[string]any{"platform": "twitter", "width": 1200, "height": 600, "user_agent": "Twitterbot/1.0"}}}))
}

func (s *spec) ogPreviewOperation() operation {
	path := &openapi3.Parameter{Name: "path", In: openapi3.ParameterInQuery, Required: true,
		Description: fmt.Sprintf("The page's path on base_url: starts with one /, no scheme or host, no query or fragment, no . or .. segments, percent-encoded or not, at most %d bytes once percent-encoded.", ogconfig.MaxPagePath),
		Schema:      openapi3.NewSchemaRef("", withExamples(str(""), "/blog/post-1"))}
	op := ogConfigs.byID(s, operation{
		tag: tagOG, summary: "Preview a page of an OG configuration",
		description: "Reads the page at path of base_url now, as a crawler's request for a new page reads it (the same address guard, and one of the client address's 30 requests a minute for the configuration), " +
			"and answers what its head says with the card each crawler's platform gets: the page's OG image URL asked with that platform's User-Agent. Nothing is stored, rendered or charged; the cards cost what the crawlers' own requests do.",
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The page was read.", schOGPreview),
			409: s.errorResponse("The configuration is disabled: enable it first."),
			422: s.errorResponse("The page could not be read (unreachable, an error status, not HTML, a blocked address, too slow): the message names the cause."),
			429: s.retryLater("The rate limit group og-config:read is exhausted, or this client address made its 30 requests a minute for new pages of the configuration: the message says which, Retry-After when to try again."),
			503: s.retryLater("The server is shutting down."),
		},
	})
	op.params = append(op.params, &openapi3.ParameterRef{Value: path})
	op.responses[400] = s.invalid()
	return op
}
