package openapi

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// The operations of images, their signed URLs, the store and usage: each is
// a route's Doc in the origin's table.

// CreateImage documents POST /v1/image.
var CreateImage = describe("createImage", func(s *spec) operation {
	return operation{
		tag: tagImages, summary: "Create an image",
		description: "Validates the parameters, charges image credits and returns the image's URL; the image renders in the background and its first GET finds it ready. " +
			"Single html and url creations may reuse an identical recent image (dedupe_duration_s) without consuming credits.",
		body:      s.anyBody("Image creation parameters.", schImageParams, schImageForm),
		responses: s.creation(), renders: true,
	}
})

// CreateImages documents POST /v1/image/batch.
var CreateImages = describe("createImages", func(s *spec) operation {
	return operation{
		tag: tagImages, summary: "Create images in a batch",
		description: fmt.Sprintf("Creates up to %d images at once: all or none. validation_errors name the variation (variations[2].url).", MaxBatch),
		body:        s.jsonBody("The batch.", schBatchRequest),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The images, in the order of the variations.", schImageBatch),
			400: s.invalid(), 403: s.creation()[403], 404: s.creation()[404], 429: s.creation()[429],
		},
		renders: true,
	}
})

// PreviewImage documents POST /v1/image/preview.
var PreviewImage = describe("previewImage", func(s *spec) operation {
	m := s.creation()
	resp := s.imageResponse("The image, rendered now under this request (a client that goes away stops the render). Content-Type follows format. " +
		"Server-Timing: render;dur=<milliseconds> is the time spent rendering (waiting for a renderer included); Cache-Control: no-store.")
	resp.Headers = openapi3.Headers{hdrServerTiming: s.headerRef(hdrServerTiming), hdrCacheControl: s.headerRef(hdrCacheControl)}
	m[200] = resp
	m[400] = s.errorResponse("Invalid request: validation_errors names every invalid field, as createImage and renderTemplate do (template.<field> for the draft), " +
		"or the render failed for the page's own reasons (a selector not found, ...).")
	m[404] = s.notFound("A template, template version, proxy or storage destination named by the request is not the organization's.")
	m[429] = s.retryLater("The organization's previews for the sliding minute are spent (30 by default, the origin's --previews-per-minute): try again after Retry-After. Nothing was rendered.")
	m[502] = s.errorResponse("The page or its proxy could not be reached, or the browser failed.")
	m[503] = s.retryLater("Every renderer is busy and the queue full: try again shortly.")
	m[504] = s.errorResponse("The render did not finish in time.")
	return operation{
		tag: tagImages, summary: "Preview an image",
		description: "Renders what createImage would (html, url or a saved template with template_values, every option honoured), or a draft template not saved yet, " +
			"with the same validation, and answers the image's bytes. Nothing is stored and no credit is used: no image, no usage, no storage destination write. " +
			"Previews take renderers as other renders do, and are limited per organization per sliding minute.",
		body:      s.anyBody("A creation request, or a draft template with template_values.", schPreviewRequest, schPreviewForm),
		responses: m,
	}
})

// GetImage documents GET /v1/image/{id}.
var GetImage = describe("getImage", func(s *spec) operation {
	return operation{
		tag: tagImages, summary: "Get an image",
		description: "Public: the unguessable id is the capability, valid while the organization is active. The extension picks the format (none or .png: PNG). " +
			"The query transforms the image at the edge, cropping before resizing (parameters other than dl are refused for PDF).",
		params:    append(params(imagePathParam("The image id, with an optional extension: .png, .jpg (.jpeg), .webp or .pdf, any case.")), s.transformRefs()...),
		responses: s.served("The image."),
	}
})

// DeleteImage documents DELETE /v1/image/{id}.
var DeleteImage = describe("deleteImage", func(s *spec) operation {
	return operation{
		tag: tagImages, summary: "Delete an image",
		description: "Deletes every stored copy and every cached rendition at every edge, then answers.",
		params:      params(pathParam("id", "The image id, without extension.", withPattern(uuidPattern, str("")))),
		responses: map[int]*openapi3.Response{
			202: emptyResponse("Deleted."),
			404: s.notFound("No such image in the organization (a malformed id included)."),
		},
	}
})

// DeleteImages documents DELETE /v1/image/batch.
var DeleteImages = describe("deleteImages", func(s *spec) operation {
	return operation{
		tag: tagImages, summary: "Delete images",
		description: "Deletes the organization's images among ids (others are skipped), every copy and cached rendition, then answers.",
		body:        s.jsonBody("The ids.", schDeleteRequest),
		responses: map[int]*openapi3.Response{
			202: emptyResponse("Deleted."),
			400: s.invalid(),
		},
	}
})

// ListImages documents GET /v1/images.
var ListImages = describe("listImages", func(s *spec) operation {
	return operation{
		tag: tagImages, summary: "List images",
		description: "The organization's images, newest first. Concurrent creations and deletions never make a page repeat or skip an image that exists throughout.",
		params: params(
			query("count", fmt.Sprintf("Page size, 1 to %d (default %d).", MaxImageList, MaxImageList), withDefault(MaxImageList, integer(1, MaxImageList, ""))),
			query("page_token", "The next_page_token of the previous page; a token not issued for this organization is a 400 naming page_token.", str("")),
		),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("One page of images.", schImageList),
			400: s.invalid(),
		},
	}
})

// GetImageInfo documents GET /v1/images/{id}.
var GetImageInfo = describe("getImageInfo", func(s *spec) operation {
	return operation{
		tag: tagImages, summary: "Get an image's details",
		description: "The image's creation parameters (defaults resolved, in request field names), its state and size once rendered, and the address of each format.",
		params:      params(pathParam("id", "The image id, without extension.", withPattern(uuidPattern, str("")))),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The image.", schImageInfo),
			404: s.notFound("No such image in the organization (a malformed id included)."),
		},
	}
})

// RenderSignedImage documents GET /v1/image/create-and-render/{api_id}/{token}.
var RenderSignedImage = describe("renderSignedImage", func(s *spec) operation {
	return operation{
		tag: tagSigned, summary: "Create and render from a signed URL",
		description: "The query holds image creation parameters, as a form does; the token signs it with an enabled key holding images:create. " +
			"The image id derives from the organization and the parameters, so the same URL creates (and charges) once and is served from cache afterwards. " +
			"Not for storage destinations with hcti_storage_disabled. Disabling the key, or removing its images:create, purges what its URLs produced.",
		params:    append(params(pathParam("api_id", "The signing key's api_id.", str("")), tokenParam()), signedQuery(s)),
		responses: s.signed(), renders: true,
	}
})

// RenderSignedImageAs documents GET /v1/image/create-and-render/{api_id}/{token}/{format}.
var RenderSignedImageAs = inFormat("renderSignedImageAs", RenderSignedImage)

// StoreImage documents PUT /v1/store/{id}.
var StoreImage = describe("storeImage", func(s *spec) operation {
	return operation{
		tag: tagStore, summary: "Write an image to its storage destination",
		description: "Renders the image when needed and writes it to the storage destination it was created with: the base object <prefix>/<id>.png (.pdf with pdf_options) and, " +
			"when the extension or the query asks for something else, that as the transformation object (<prefix>/<id>_w-400.webp), made as the edge makes GET /v1/image/{id} with that query. " +
			"A repeat answers already_stored. Images of a destination with hcti_storage_disabled keep nothing in Pictor's storage afterwards. No request body.",
		params: append(params(imagePathParam("The image id, with an optional extension choosing the transformation's format.")), s.transformRefs()...),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("complete: every object stored.", schStoreResult),
			400: s.errorResponse("An unknown or invalid query parameter (named in validation_errors), or an image without storage_destination_id."),
			404: s.notFound("No such image in the organization."),
			424: s.jsonResponse("partial (the base stored, the transformation not) or failed (the base not stored): error says why.", schStoreResult),
		},
	}
})

// GetUsage documents GET /v1/usage.
var GetUsage = describe("getUsage", func(s *spec) operation {
	return operation{
		tag: tagUsage, summary: "Get usage",
		description: "Image credits used by hour, day, month and billing period. Jumbo images count their credits; a render that found no page gives its credits back.",
		responses:   map[int]*openapi3.Response{200: s.jsonResponse("The usage.", schUsage)},
	}
})
