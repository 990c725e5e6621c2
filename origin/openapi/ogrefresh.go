package openapi

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pictorhq/pictor/origin/ogconfig"
)

// A refresh of OG pages on demand.

const (
	schOGRefreshRequest = "OGRefreshRequest"
	schOGRefreshForm    = "OGRefreshRequestForm"
	schOGRefresh        = "OGRefresh"
	schOGRefreshAll     = "OGRefreshAll"
)

func (s *spec) defineOGRefresh() {
	body := open(object("Which page to read again. Without path (no body, {} or a null path) every page of the configuration is read again at its next request. Unknown fields are ignored.",
		opt("path", nullable(withLength(1, ogconfig.MaxPagePath, withExamples(str(fmt.Sprintf(
			"The page's path on base_url, as in its OG image URL: starts with one /, no scheme or host, no query or fragment, percent-encoded or not (/café and /caf%%C3%%A9 are one page), at most %d bytes once percent-encoded. "+
				"It is normalised as the OG image URL's path is (// and . segments go, .. removes the segment before it, a final / goes).", ogconfig.MaxPagePath)), "/blog/post-1")))),
	))
	s.schema(schOGRefreshRequest, body)
	form := formSchema(body, "The same as a form; an empty path counts as not sent (every page).")
	form.Properties["path"] = openapi3.NewSchemaRef("", withLength(0, ogconfig.MaxPagePath, str("The page's path, as in the JSON body; empty for every page.")))
	s.schema(schOGRefreshForm, form)
	s.schema(schOGRefresh, withExamples(object("The page as it was read now.",
		req("path", str("The page's path, normalised.")),
		req("url", uri("The page's OG image URL: the next GET answers the card of this identity.")),
		req("identity", withPattern("^[0-9a-f]{32}$", str("Names the page's card: a hash of everything its images are made from (the resolved capture request, the configuration's revision, content_version, the template version). It changes exactly when the card does."))),
		req("image_id", nullable(uuidString("The image the default platform is served (the one image unless optimization_mode is set_viewport); null with set_viewport when the default platform never asked for the page."))),
		req("changed", boolean("The identity differs from the one recorded before (or the page was never read): edges dropped the page's cards before this answer.")),
		req("rendered", boolean("A new image was made, charged as any OG image (caps, credits). false when nothing changed, or when the new identity's image existed already.")),
		req("checked_at", timestamp("When the page was read")),
	), map[string]any{"path": "/blog/post-1", "url": "https://img.example.com/v1/og/abcdefghijklmnopqrstuvwxyz/blog/post-1",
		"identity": "3f2a9c0e5b7d4e1f8a6c2b9d0e4f7a1c", "image_id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "changed": true, "rendered": true,
		"checked_at": "2026-03-14T15:09:26.000Z"}))
	s.schema(schOGRefreshAll, withExamples(object("Every page of the configuration is read again at its next request.",
		req("pages", enum("Every page.", "all")),
		req("refresh_requested_at", timestamp("When the refresh was asked")),
	), map[string]any{"pages": "all", "refresh_requested_at": "2026-03-14T15:09:26.000Z"}))
}

func (s *spec) ogRefreshOperation() operation {
	body := s.anyBody("The page to read again; none for every page.", schOGRefreshRequest, schOGRefreshForm)
	body.Required = false
	return ogConfigs.byID(s, operation{
		tag: tagOG, summary: "Read a page (or every page) of an OG configuration again",
		description: "With a path: reads that page of base_url now (through the same address guard as renders, unconditionally) and answers its card's identity; " +
			"a new image is rendered only when the identity changed (a new content_version, new metadata, a new template version), charged as any OG image (caps, the organization's OG share, credits, the render budget), " +
			"and every edge drops the page's cards before the answer, so the next GET of its URL answers the new card. A page that cannot be read or rendered keeps its current card. " +
			"Without a path: every page is read again at its next request (its current card served meanwhile), and every edge drops the configuration's cards; nothing is read or rendered now.",
		body: body,
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The page was read: its card's identity.", schOGRefresh),
			202: s.jsonResponse("Every page will be read again at its next request.", schOGRefreshAll),
			409: s.errorResponse("The configuration is disabled: enable it first."),
			422: s.errorResponse("The page could not be read (unreachable, an error status, not HTML, a blocked address, too slow), or does not make a valid card, or its card could not be rendered: the message names the cause. Its current card stays served."),
			429: s.retryLater("The rate limit group og-config:write is exhausted (nothing was done); or the page changed and a cap of the configuration on new images, the organization's OG share of its credits, or its credits refuse a new image: the message says which, Retry-After when it frees up. Its current card stays served."),
			503: s.retryLater("The configuration's render budget (60 new renders a minute on each origin) is spent, the page is being read by other requests, or the server is shutting down: try again after Retry-After."),
		},
	})
}
