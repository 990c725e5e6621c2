package openapi

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pictorhq/pictor/origin/images"
)

// The signed URL of a template, made by the API for a caller without the
// key's secret at hand (the console).

const (
	schSignTemplateRequest = "TemplateSignedURLRequest"
	schSignedTemplateURL   = "TemplateSignedURL"
)

func (s *spec) defineSignTemplate() {
	values := typed(openapi3.TypeObject, "The template's values, as template_values of a render. A string that is not valid JSON goes into the URL as it is, any other value as its JSON (so the string \"12\" stays a string). A value named template_version cannot be sent.")
	values.AdditionalProperties = openapi3.AdditionalProperties{}
	s.schema(schSignTemplateRequest, withExamples(object("What the signed URL renders. Every field is optional.",
		optRef("template_values", openapi3.NewSchemaRef("", values)),
		opt("template_version", integer(1, 1<<31, "The version the URL renders; without it, the latest version when the URL is fetched.")),
		opt("format", enum("The URL's format segment (any case; the URL has it in lower case); without it, PNG.", "png", "jpg", "jpeg", "webp", "pdf", "PNG", "JPG", "JPEG", "WEBP", "PDF")),
	), map[string]any{"template_values": map[string]any{"title": "Hello"}, "format": "webp"}))
	s.schema(schSignedTemplateURL, withExamples(object("The signed URL.",
		req("url", uri(fmt.Sprintf("GET /v1/image/{template_id}/{token}[/{format}]?values, signed with the calling key's secret; its path and query hold at most %d bytes.", images.MaxSignedURL))),
	), map[string]any{"url": "https://img.example.com/v1/image/t-0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d/3f2a9c0e5b7d4e1f8a6c2b9d0e4f7a1c3f2a9c0e5b7d4e1f8a6c2b9d0e4f7a1c/webp?title=Hello"}))
}

// SignTemplateURL documents POST /v1/template/{id}/signed-url.
var SignTemplateURL = describe("signTemplateURL", func(s *spec) operation {
	return operation{
		tag: tagTemplates, summary: "Make a template's signed URL",
		description: "The signed URL (renderSignedTemplate) of the template for the values, signed with the calling key's secret, which is never in the answer: " +
			"its first GET renders the image and charges it to the organization, as that key. Nothing is rendered or charged now. " +
			"Disabling the key, or changing or deleting the template, purges what the URL produced.",
		params: params(templateIDParam("id")),
		body:   s.jsonBody("The values and, optionally, the version and format.", schSignTemplateRequest),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The signed URL.", schSignedTemplateURL),
			400: s.errorResponse("Invalid request: template_values not an object, holding template_version, or making a URL past its bound; an unknown format; a template_version that is not a positive integer."),
			404: s.notFound("No such template (or version) in the organization."),
		},
	}
})
