package openapi

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// operation documents one route of the table.
type operation struct {
	// path is the OpenAPI path when it is not the route's pattern: OpenAPI
	// forbids two paths that differ only in their parameters' names, so
	// routes sharing a shape share one path and its parameter names.
	path        string
	id          string
	summary     string
	description string
	tag         string
	params      openapi3.Parameters
	body        *openapi3.RequestBody
	// responses by status. Build adds what the route table implies (401
	// and 403 for authenticated routes, 429 and the rate-limit headers for
	// limited ones, 400, 413 and 415 with a body, and a default).
	responses map[int]*openapi3.Response
	// renders: the answers carry the x-renders-* headers (image creation).
	renders bool
}

// Tags, in the document's order.
var tags = []struct{ name, description string }{
	{tagImages, "Create, read, list and delete images."},
	{tagSigned, "Signed URLs that create and render an image on their first GET, and are served from cache afterwards."},
	{tagTemplates, "Templates: HTML and CSS with Handlebars placeholders, rendered with values per image."},
	{tagStore, "Uploads to storage destinations."},
	{tagUsage, "Image credits used."},
	{tagOG, "Social-card (Open Graph) images of a connected site, and their configurations."},
	{tagProxies, "HTTP proxies for a render's outbound traffic (the 10,000 images/month plan or higher)."},
	{tagDestinations, "S3-compatible buckets images are also written to (the 10,000 images/month plan or higher)."},
	{tagKeys, "API keys of the organization."},
}

const (
	tagImages       = "Images"
	tagSigned       = "Signed URLs"
	tagTemplates    = "Templates"
	tagStore        = "Store"
	tagUsage        = "Usage"
	tagOG           = "OG images"
	tagProxies      = "Proxies"
	tagDestinations = "Storage destinations"
	tagKeys         = "API keys"
)

// Response helpers.

func (s *spec) jsonResponse(description, schemaName string) *openapi3.Response {
	return openapi3.NewResponse().WithDescription(description).WithContent(openapi3.NewContentWithJSONSchemaRef(s.ref(schemaName)))
}

func (s *spec) errorResponse(description string) *openapi3.Response {
	return s.jsonResponse(description, schError)
}

func emptyResponse(description string) *openapi3.Response {
	return openapi3.NewResponse().WithDescription(description)
}

// imageResponse is an image's bytes in the format its URL names.
func (s *spec) imageResponse(description string) *openapi3.Response {
	r := emptyResponse(description)
	r.Content = openapi3.Content{}
	for _, t := range []string{"image/png", "image/jpeg", "image/webp", "application/pdf"} {
		r.Content[t] = openapi3.NewMediaType()
	}
	r.Headers = openapi3.Headers{
		hdrETag:         s.headerRef(hdrETag),
		hdrCacheControl: s.headerRef(hdrCacheControl),
		hdrDisposition:  s.headerRef(hdrDisposition),
	}
	return r
}

func (s *spec) retryLater(description string) *openapi3.Response {
	r := s.errorResponse(description)
	r.Headers = openapi3.Headers{hdrRetryAfter: s.headerRef(hdrRetryAfter)}
	return r
}

// Request body helpers.

func (s *spec) jsonBody(description, schemaName string) *openapi3.RequestBody {
	content := openapi3.NewContentWithJSONSchemaRef(s.ref(schemaName))
	return openapi3.NewRequestBody().WithDescription(description + " A request without Content-Type is read as JSON.").WithRequired(true).WithContent(content)
}

// anyBody is a body of JSON or either form encoding.
func (s *spec) anyBody(description, jsonSchema, formSchema string) *openapi3.RequestBody {
	b := s.jsonBody(description+" Also accepted as application/x-www-form-urlencoded or multipart/form-data (file parts are ignored).", jsonSchema)
	b.Content["application/x-www-form-urlencoded"] = openapi3.NewMediaType().WithSchemaRef(s.ref(formSchema))
	b.Content["multipart/form-data"] = openapi3.NewMediaType().WithSchemaRef(s.ref(formSchema))
	return b
}

// Parameter helpers.

func params(ps ...*openapi3.Parameter) openapi3.Parameters {
	out := make(openapi3.Parameters, len(ps))
	for i, p := range ps {
		out[i] = &openapi3.ParameterRef{Value: p}
	}
	return out
}

func (s *spec) refs(names ...string) openapi3.Parameters {
	out := make(openapi3.Parameters, len(names))
	for i, n := range names {
		out[i] = s.paramRef(n)
	}
	return out
}

func (s *spec) transformRefs() openapi3.Parameters {
	var names []string
	for _, p := range transformParams() {
		names = append(names, p.Name)
	}
	return s.refs(names...)
}

func idParam(what string) *openapi3.Parameter {
	return pathParam("id", "The "+what+" id. A malformed id is a 400 naming id.", withPattern(uuidPattern, str("")))
}

const extPattern = `(\.([Pp][Nn][Gg]|[Jj][Pp][Ee]?[Gg]|[Ww][Ee][Bb][Pp]|[Pp][Dd][Ff]))?`

func imagePathParam(description string) *openapi3.Parameter {
	return pathParam("id", description, withExamples(withPattern(uuidPattern[:len(uuidPattern)-1]+extPattern+"$", str("")),
		"0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d.webp"))
}

func formatParam() *openapi3.Parameter {
	return pathParam("format", "The format: png, jpg (or jpeg), webp or pdf, any case; another is a 404. Without this segment, PNG.",
		enum("", "png", "jpg", "jpeg", "webp", "pdf", "PNG", "JPG", "JPEG", "WEBP", "PDF"))
}

func tokenParam() *openapi3.Parameter {
	return pathParam("token", "Lowercase hex HMAC-SHA256 of the exact query string after ? (nothing for an empty query), keyed with the API key's secret (any case). A wrong token is a 401 \"Invalid token\".",
		withPattern("^[0-9A-Fa-f]{64}$", str("")))
}

// operations documents the routes of the table, by "METHOD pattern".
func (s *spec) operations() map[string]operation {
	notFound := func(what string) *openapi3.Response { return s.errorResponse(what) }
	invalid := s.errorResponse("Invalid request: validation_errors names every invalid field.")
	planLimit := func(what string) *openapi3.Response { return s.errorResponse(what) }
	created := s.jsonResponse("The image: its URL answers once the image is rendered (rendering starts at once, in the background).", schImage)
	creation := map[int]*openapi3.Response{
		200: created,
		400: invalid,
		403: s.errorResponse("Missing permission; or proxy_id or storage_destination_id on a plan below 10,000 images a month."),
		404: notFound("A template, template version, proxy or storage destination named by the request is not the organization's."),
		429: planLimit("Plan limit exceeded: not enough image credits left in the billing period (error \"Plan limit exceeded\"). Waiting does not restore credits."),
	}
	copyOf := func(m map[int]*openapi3.Response) map[int]*openapi3.Response {
		out := map[int]*openapi3.Response{}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	served := func(what string) map[int]*openapi3.Response {
		return map[int]*openapi3.Response{
			200: s.imageResponse(what + " Content-Type follows the format: image/png, image/jpeg, image/webp or application/pdf. Cached for a year (public, immutable)."),
			206: s.imageResponse("Part of a PDF (one byte range; other formats are always sent whole)."),
			304: emptyResponse("Not modified (If-None-Match matched the ETag)."),
			400: s.errorResponse("An invalid transformation; or the render failed because of its input (selector not found, ScreenshotReady() never called, a refused address...). Render failures are not cached."),
			404: notFound("No such image, or its organization is suspended, or it is kept only in a storage destination."),
			412: s.errorResponse("A precondition (If-Match, If-Unmodified-Since) does not hold."),
			416: s.errorResponse("The range is not satisfiable."),
			502: s.errorResponse("The page could not be loaded (a name that does not resolve, a refused connection, a TLS failure, a failing proxy)."),
			503: s.retryLater("The render queue is full: try again after Retry-After."),
			504: s.errorResponse("The render outlived its deadline."),
		}
	}
	signed := func() map[int]*openapi3.Response {
		m := served("The image, created and charged on the URL's first GET and served afterwards.")
		m[401] = s.errorResponse("Invalid token: the signature does not match, or the key is unknown or disabled, or its organization suspended.")
		m[403] = s.errorResponse("The signing key lacks images:create (create-and-render), or proxy_id/storage_destination_id on a plan below 10,000 images a month.")
		m[429] = planLimit("Plan limit exceeded: not enough image credits left for a new image.")
		return m
	}
	plan := "Needs the 10,000 images/month plan or higher: below it every route of the resource answers 403 naming the plan, before the rate limit."

	ops := map[string]operation{
		"POST /v1/image": {
			id: "createImage", tag: tagImages, summary: "Create an image",
			description: "Validates the parameters, charges image credits and returns the image's URL; the image renders in the background and its first GET finds it ready. " +
				"Single html and url creations may reuse an identical recent image (dedupe_duration_s) without consuming credits.",
			body:      s.anyBody("Image creation parameters.", schImageParams, schImageForm),
			responses: copyOf(creation), renders: true,
		},
		"POST /v1/image/batch": {
			id: "createImages", tag: tagImages, summary: "Create images in a batch",
			description: fmt.Sprintf("Creates up to %d images at once: all or none. validation_errors name the variation (variations[2].url).", MaxBatch),
			body:        s.jsonBody("The batch.", schBatchRequest),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("The images, in the order of the variations.", schImageBatch),
				400: invalid, 403: creation[403], 404: creation[404], 429: creation[429],
			},
			renders: true,
		},
		"GET /v1/image/{id}": {
			id: "getImage", tag: tagImages, summary: "Get an image",
			description: "Public: the unguessable id is the capability, valid while the organization is active. The extension picks the format (none or .png: PNG). " +
				"The query transforms the image at the edge, cropping before resizing (parameters other than dl are refused for PDF).",
			params:    append(params(imagePathParam("The image id, with an optional extension: .png, .jpg (.jpeg), .webp or .pdf, any case.")), s.transformRefs()...),
			responses: served("The image."),
		},
		"DELETE /v1/image/{id}": {
			id: "deleteImage", tag: tagImages, summary: "Delete an image",
			description: "Deletes every stored copy and every cached rendition at every edge, then answers.",
			params:      params(pathParam("id", "The image id, without extension.", withPattern(uuidPattern, str("")))),
			responses: map[int]*openapi3.Response{
				202: emptyResponse("Deleted."),
				404: notFound("No such image in the organization (a malformed id included)."),
			},
		},
		"DELETE /v1/image/batch": {
			id: "deleteImages", tag: tagImages, summary: "Delete images",
			description: "Deletes the organization's images among ids (others are skipped), every copy and cached rendition, then answers.",
			body:        s.jsonBody("The ids.", schDeleteRequest),
			responses: map[int]*openapi3.Response{
				202: emptyResponse("Deleted."),
				400: invalid,
			},
		},
		"GET /v1/images": {
			id: "listImages", tag: tagImages, summary: "List images",
			description: "The organization's images, newest first. Concurrent creations and deletions never make a page repeat or skip an image that exists throughout.",
			params: params(
				query("count", fmt.Sprintf("Page size, 1 to %d (default %d).", MaxImageList, MaxImageList), withDefault(MaxImageList, integer(1, MaxImageList, ""))),
				query("page_token", "The next_page_token of the previous page; a token not issued for this organization is a 400 naming page_token.", str("")),
			),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("One page of images.", schImageList),
				400: invalid,
			},
		},
		"GET /v1/image/create-and-render/{api_id}/{token}": {
			id: "renderSignedImage", tag: tagSigned, summary: "Create and render from a signed URL",
			description: "The query holds image creation parameters, as a form does; the token signs it with an enabled key holding images:create. " +
				"The image id derives from the organization and the parameters, so the same URL creates (and charges) once and is served from cache afterwards. " +
				"Not for storage destinations with hcti_storage_disabled. Disabling the key, or removing its images:create, purges what its URLs produced.",
			params:    append(params(pathParam("api_id", "The signing key's api_id.", str("")), tokenParam()), signedQuery(s)),
			responses: signed(), renders: true,
		},
		"GET /v1/image/create-and-render/{api_id}/{token}/{format}": {
			id: "renderSignedImageAs", tag: tagSigned, summary: "Create and render from a signed URL, in a format",
			description: "renderSignedImage with the format in the path.",
			params:      append(params(pathParam("api_id", "The signing key's api_id.", str("")), tokenParam(), formatParam()), signedQuery(s)),
			responses:   signed(), renders: true,
		},
		"PUT /v1/store/{id}": {
			id: "storeImage", tag: tagStore, summary: "Write an image to its storage destination",
			description: "Renders the image when needed and writes it to the storage destination it was created with: the base object <prefix>/<id>.png (.pdf with pdf_options) and, " +
				"when the extension or the query asks for something else, that as the transformation object (<prefix>/<id>_w-400.webp), made as the edge makes GET /v1/image/{id} with that query. " +
				"A repeat answers already_stored. Images of a destination with hcti_storage_disabled keep nothing in Pictor's storage afterwards. No request body.",
			params: append(params(imagePathParam("The image id, with an optional extension choosing the transformation's format.")), s.transformRefs()...),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("complete: every object stored.", schStoreResult),
				400: s.errorResponse("An unknown or invalid query parameter (named in validation_errors), or an image without storage_destination_id."),
				404: notFound("No such image in the organization."),
				424: s.jsonResponse("partial (the base stored, the transformation not) or failed (the base not stored): error says why.", schStoreResult),
			},
		},
		"GET /v1/usage": {
			id: "getUsage", tag: tagUsage, summary: "Get usage",
			description: "Image credits used by hour, day, month and billing period. Jumbo images count their credits; a render that found no page gives its credits back.",
			responses:   map[int]*openapi3.Response{200: s.jsonResponse("The usage.", schUsage)},
		},

		"POST /v1/image/{template_id}": {
			path: "/v1/image/{id}",
			id:   "renderTemplate", tag: tagTemplates, summary: "Create an image from a template",
			description: "Renders the template's latest version (or template_version) with template_values, its render defaults under the request's options. The result is an ordinary HTML image.",
			params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
			body:        s.anyBody("Template values and options.", schTemplateRender, schTemplateForm),
			responses: map[int]*openapi3.Response{
				200: created,
				400: s.errorResponse("Invalid request; a template fault (runaway loop, memory, depth, output size, missing helper) names template_values."),
				403: creation[403], 404: notFound("No such template or version in the organization, or a proxy or storage destination named that is not the organization's."), 429: creation[429],
			},
			renders: true,
		},
		"POST /v1/image/{template_id}/{template_version}": {
			path: "/v1/image/{template_id}/{version_or_token}",
			id:   "renderTemplateVersion", tag: tagTemplates, summary: "Create an image from a template version",
			description: "renderTemplate with the version in the path.",
			params: params(pathParam("template_id", "The template id (t-...).", withPattern(templateIDPattern, str(""))),
				pathParam("version_or_token", "The template version, a positive integer (anything else is a 400 naming template_version).", withPattern("^[1-9][0-9]*$", str("")))),
			body: s.anyBody("Template values and options (template_version in the body is ignored).", schTemplateRender, schTemplateForm),
			responses: map[int]*openapi3.Response{
				200: created,
				400: s.errorResponse("Invalid request; a template fault names template_values."),
				403: creation[403], 404: notFound("No such template or version in the organization, or a proxy or storage destination named that is not the organization's."), 429: creation[429],
			},
			renders: true,
		},
		"GET /v1/image/{template_id}/{token}": {
			path: "/v1/image/{template_id}/{version_or_token}",
			id:   "renderSignedTemplate", tag: tagSigned, summary: "Render a template from a signed URL",
			description: "Each query parameter is a template value; template_version picks a version (the latest when absent). Any enabled key of the template's organization holding images:create may have signed it. " +
				"Changing or deleting the template, or disabling the key, purges what the URL produced.",
			params: append(params(pathParam("template_id", "The template id (t-...).", withPattern(templateIDPattern, str(""))),
				pathParam("version_or_token", tokenParam().Description, withPattern("^[0-9A-Fa-f]{64}$", str("")))), templateQuery()),
			responses: signed(), renders: true,
		},
		"GET /v1/image/{template_id}/{token}/{format}": {
			id: "renderSignedTemplateAs", tag: tagSigned, summary: "Render a template from a signed URL, in a format",
			description: "renderSignedTemplate with the format in the path.",
			params: append(params(pathParam("template_id", "The template id (t-...).", withPattern(templateIDPattern, str(""))),
				tokenParam(), formatParam()), templateQuery()),
			responses: signed(), renders: true,
		},
		"POST /v1/template": {
			id: "createTemplate", tag: tagTemplates, summary: "Create a template",
			body: s.anyBody("The template.", schTemplateRequest, schTemplateFormReq),
			responses: map[int]*openapi3.Response{
				201: s.jsonResponse("Created: the template id and its first version.", schTemplateSaved),
				400: s.errorResponse("Invalid request; a syntax error names html or css with line and column."),
				429: planLimit("Plan limit exceeded: the plan's template allowance is used (the free plan holds 1)."),
			},
		},
		"GET /v1/template": {
			id: "listTemplates", tag: tagTemplates, summary: "List templates",
			description: "The latest version of each template, newest first.",
			params:      s.refs(parCount, parPageStart),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("One page of templates.", schTemplateList),
				400: invalid,
			},
		},
		"GET /v1/template/{id}": {
			id: "listTemplateVersions", tag: tagTemplates, summary: "List a template's versions",
			description: "Every version of the template, in one page (next_page_start is null).",
			params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("The versions.", schTemplateList),
				404: notFound("No such template in the organization."),
			},
		},
		"POST /v1/template/{id}": {
			id: "updateTemplate", tag: tagTemplates, summary: "Update a template",
			description: "Saves a new version; when the latest version has rendered nothing yet, replaces it instead. Edges drop what the template's signed URLs produced.",
			params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
			body:        s.anyBody("The template.", schTemplateRequest, schTemplateFormReq),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Saved: the version.", schTemplateSaved),
				400: s.errorResponse("Invalid request; a syntax error names html or css with line and column."),
				404: notFound("No such template in the organization."),
			},
		},
		"DELETE /v1/template/{id}": {
			id: "deleteTemplate", tag: tagTemplates, summary: "Delete a template",
			description: "Deletes the template and every version; images already made stay. Edges drop what its signed URLs produced.",
			params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
			responses: map[int]*openapi3.Response{
				204: emptyResponse("Deleted."),
				404: notFound("No such template in the organization."),
			},
		},

		"GET /v1/og/{domain_id}": {
			id: "getOGImageOfRoot", tag: tagOG, summary: "Get the social-card image of a site's home page",
			description: "getOGImage for the path /.",
			params:      params(ogDomainParam()),
			responses:   s.ogResponses(),
		},
		"GET /v1/og/{domain_id}/{path...}": {
			path: "/v1/og/{domain_id}/{path}",
			id:   "getOGImage", tag: tagOG, summary: "Get the social-card image of a page",
			description: "Public. The social-card image of the page at the same path of the configuration's base_url, sized for the crawler that asks (by User-Agent). " +
				"The home page is /v1/og/{domain_id} (or with a final /). The query string is ignored. The page's metadata is reused until its refresh interval ends; then the current image is served at once and the page read again in the background.",
			params: params(ogDomainParam(), &openapi3.Parameter{Name: "path", In: openapi3.ParameterInPath, Required: true,
				Description: "The page's path on the site, which may hold further / (sent as they are, not percent-encoded).",
				Schema:      openapi3.NewSchemaRef("", str("")), AllowReserved: false}),
			responses: s.ogResponses(),
		},
		"POST /v1/og-configs": {
			id: "createOGConfig", tag: tagOG, summary: "Create an OG configuration",
			body: s.anyBody("The configuration.", schOGRequest, schOGForm),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Created.", schOG),
				400: invalid,
				404: notFound("The template or version named is not the organization's."),
				409: s.errorResponse("Another enabled configuration of the organization has this base_url; the message names it."),
			},
		},
		"GET /v1/og-configs": {
			id: "listOGConfigs", tag: tagOG, summary: "List OG configurations",
			params: s.refs(parCount, parPageStart),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("One page of configurations.", schOGList),
				400: invalid,
			},
		},
		"GET /v1/og-configs/{id}": {
			id: "getOGConfig", tag: tagOG, summary: "Get an OG configuration",
			params: params(idParam("OG configuration")),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("The configuration.", schOG),
				400: invalid,
				404: notFound("No such configuration in the organization."),
			},
		},
		"POST /v1/og-configs/{id}": {
			id: "updateOGConfig", tag: tagOG, summary: "Update an OG configuration",
			description: "Replaces the configuration; every edge drops its images before the answer.",
			params:      params(idParam("OG configuration")),
			body:        s.anyBody("The configuration.", schOGRequest, schOGForm),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Updated.", schOG),
				400: invalid,
				404: notFound("No such configuration in the organization, or the template or version named is not the organization's."),
				409: s.errorResponse("Another enabled configuration of the organization has this base_url; the message names it."),
			},
		},
		"POST /v1/og-configs/{id}/refresh": s.ogRefreshOperation(notFound, invalid),
		"DELETE /v1/og-configs/{id}": {
			id: "deleteOGConfig", tag: tagOG, summary: "Delete an OG configuration",
			description: "Deletes the configuration; every edge drops its images before the answer.",
			params:      params(idParam("OG configuration")),
			responses: map[int]*openapi3.Response{
				204: emptyResponse("Deleted."),
				400: invalid,
				404: notFound("No such configuration in the organization."),
			},
		},

		"POST /v1/proxies": {
			id: "createProxy", tag: tagProxies, summary: "Create a proxy", description: plan,
			body: s.anyBody("The proxy.", schProxyRequest, schProxyForm),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Created.", schProxy),
				400: invalid,
			},
		},
		"GET /v1/proxies": {
			id: "listProxies", tag: tagProxies, summary: "List proxies", description: plan,
			params: s.refs(parCount, parPageStart),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("One page of proxies.", schProxyList),
				400: invalid,
			},
		},
		"GET /v1/proxies/{id}": {
			id: "getProxy", tag: tagProxies, summary: "Get a proxy", description: plan,
			params: params(idParam("proxy")),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("The proxy.", schProxy),
				400: invalid,
				404: notFound("No such proxy in the organization."),
			},
		},
		"POST /v1/proxies/{id}": {
			id: "updateProxy", tag: tagProxies, summary: "Update a proxy",
			description: "Replaces the proxy. " + plan,
			params:      params(idParam("proxy")),
			body:        s.anyBody("The proxy.", schProxyRequest, schProxyForm),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Updated.", schProxy),
				400: invalid,
				404: notFound("No such proxy in the organization."),
			},
		},
		"DELETE /v1/proxies/{id}": {
			id: "deleteProxy", tag: tagProxies, summary: "Delete a proxy",
			description: "Images already made through it are unaffected. " + plan,
			params:      params(idParam("proxy")),
			responses: map[int]*openapi3.Response{
				204: emptyResponse("Deleted."),
				400: invalid,
				404: notFound("No such proxy in the organization."),
			},
		},

		"POST /v1/storage-destinations": {
			id: "createStorageDestination", tag: tagDestinations, summary: "Create a storage destination", description: plan,
			body: s.jsonBody("The destination.", schDestRequest),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Created (its connection test passed, or it is disabled with the failure recorded).", schDest),
				400: s.errorResponse("Invalid request, or the connection test of an enabled destination failed (validation_errors names connection_info, in the provider's words)."),
			},
		},
		"GET /v1/storage-destinations": {
			id: "listStorageDestinations", tag: tagDestinations, summary: "List storage destinations", description: plan,
			params: s.refs(parCount, parPageStart),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("One page of destinations.", schDestList),
				400: invalid,
			},
		},
		"GET /v1/storage-destinations/aws-external-id": {
			id: "getAWSExternalID", tag: tagDestinations, summary: "Get the AWS external id",
			description: "The external id Pictor sends when it assumes an aws_s3 destination's role. " + plan,
			responses:   map[int]*openapi3.Response{200: s.jsonResponse("The external id.", schExternalID)},
		},
		"GET /v1/storage-destinations/{id}": {
			id: "getStorageDestination", tag: tagDestinations, summary: "Get a storage destination", description: plan,
			params: params(idParam("storage destination")),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("The destination.", schDest),
				400: invalid,
				404: notFound("No such destination in the organization."),
			},
		},
		"POST /v1/storage-destinations/{id}": {
			id: "updateStorageDestination", tag: tagDestinations, summary: "Update a storage destination",
			description: "Replaces the destination; a change of connection (or enabling it again) runs the connection test. " + plan,
			params:      params(idParam("storage destination")),
			body:        s.jsonBody("The destination.", schDestRequest),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Updated.", schDest),
				400: s.errorResponse("Invalid request, or the connection test of an enabled destination failed (validation_errors names connection_info)."),
				404: notFound("No such destination in the organization."),
				409: s.errorResponse("The destination was changed by another request meanwhile: read it and try again."),
			},
		},
		"DELETE /v1/storage-destinations/{id}": {
			id: "deleteStorageDestination", tag: tagDestinations, summary: "Delete a storage destination",
			description: "Objects already written stay in the bucket. " + plan,
			params:      params(idParam("storage destination")),
			responses: map[int]*openapi3.Response{
				204: emptyResponse("Deleted."),
				400: invalid,
				404: notFound("No such destination in the organization."),
			},
		},

		"POST /v1/api-keys": {
			id: "createAPIKey", tag: tagKeys, summary: "Create an API key",
			description: "The new key's permissions must be no broader than the caller's. An organization holds at most 100 keys, disabled ones included.",
			body:        s.jsonBody("The key.", schKeyRequest),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Created: the key with its secret, shown only now.", schKeyCreated),
				400: invalid,
				403: s.errorResponse("Missing permission; insufficient authority (the request grants permissions the caller lacks); or the limit of 100 keys."),
			},
		},
		"GET /v1/api-keys": {
			id: "listAPIKeys", tag: tagKeys, summary: "List API keys",
			params: append(s.refs(parCount, parPageStart),
				&openapi3.ParameterRef{Value: query("include_disabled", "true (or 1) lists disabled keys too (default false).", withDefault(false, boolean("")))},
				&openapi3.ParameterRef{Value: &openapi3.Parameter{Name: "with_permission", In: openapi3.ParameterInQuery,
					Description: "Only keys holding every permission named (repeat the parameter; all-future keys hold them all).",
					Style:       openapi3.SerializationForm, Explode: openapi3.Ptr(true),
					Schema: openapi3.NewSchemaRef("", arrayOf("", s.ref(schPermission)))}},
			),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("One page of keys.", schKeyList),
				400: invalid,
			},
		},
		"GET /v1/api-keys/{id}": {
			id: "getAPIKey", tag: tagKeys, summary: "Get an API key",
			params: params(idParam("API key")),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("The key (disabled keys included), without its secret.", schKey),
				400: invalid,
				404: notFound("No such key in the organization."),
			},
		},
		"POST /v1/api-keys/{id}": {
			id: "updateAPIKey", tag: tagKeys, summary: "Update an API key",
			description: "Replaces the key (no rotation: the credentials stay). The caller needs authority over both the key's current permissions and the requested ones.",
			params:      params(idParam("API key")),
			body:        s.jsonBody("The key.", schKeyRequest),
			responses: map[int]*openapi3.Response{
				200: s.jsonResponse("Updated, without its secret.", schKey),
				400: invalid,
				403: s.errorResponse("Missing permission, or insufficient authority over the key's or the requested permissions."),
				404: notFound("No such key in the organization."),
			},
		},
		"DELETE /v1/api-keys/{id}": {
			id: "deleteAPIKey", tag: tagKeys, summary: "Disable an API key",
			description: "Disables the key (idempotent): it stays listed with include_disabled and keeps its slot. Its MCP connections are revoked and what its signed URLs produced is purged.",
			params:      params(idParam("API key")),
			responses: map[int]*openapi3.Response{
				204: emptyResponse("Disabled."),
				400: invalid,
				403: s.errorResponse("Missing permission, or insufficient authority over the key's permissions."),
				404: notFound("No such key in the organization."),
			},
		},
	}
	return ops
}

// signedQuery is the creation parameters of a signed URL: the query string
// read as a form.
func signedQuery(s *spec) *openapi3.ParameterRef {
	return &openapi3.ParameterRef{Value: &openapi3.Parameter{
		Name: "parameters", In: openapi3.ParameterInQuery, Style: openapi3.SerializationForm, Explode: openapi3.Ptr(true),
		Description: "Image creation parameters, each its own query parameter as in a form (html, css, url, viewport_width, ...). The token signs the query string exactly as sent.",
		Schema:      s.ref(schImageForm),
	}}
}

// templateQuery is the template values of a signed template URL.
func templateQuery() *openapi3.ParameterRef {
	values := typed(openapi3.TypeObject, "")
	values.Properties = openapi3.Schemas{"template_version": openapi3.NewSchemaRef("", withPattern("^[1-9][0-9]*$", str("The template version; the latest when absent.")))}
	values.AdditionalProperties = openapi3.AdditionalProperties{Schema: openapi3.NewSchemaRef("", str(""))}
	return &openapi3.ParameterRef{Value: &openapi3.Parameter{
		Name: "values", In: openapi3.ParameterInQuery, Style: openapi3.SerializationForm, Explode: openapi3.Ptr(true),
		Description: "Each query parameter but template_version is a template variable whose value is JSON (title=%22Launch%22); a value that is not JSON is taken as a string. The token signs the query string exactly as sent.",
		Schema:      openapi3.NewSchemaRef("", values),
	}}
}

func ogDomainParam() *openapi3.Parameter {
	return pathParam("domain_id", "The configuration's domain_id.", withPattern("^[A-Za-z0-9_-]{1,64}$", str("")))
}

func (s *spec) ogResponses() map[int]*openapi3.Response {
	png := emptyResponse("The page's image (PNG). Its ETag is the image's identity; Cache-Control allows max-age for what is left of the page's refresh interval and stale-while-revalidate.")
	png.Content = openapi3.Content{"image/png": openapi3.NewMediaType()}
	png.Headers = openapi3.Headers{hdrETag: s.headerRef(hdrETag), hdrCacheControl: s.headerRef(hdrCacheControl)}
	return map[int]*openapi3.Response{
		200: png,
		304: emptyResponse("Not modified (If-None-Match matched the ETag)."),
		400: s.errorResponse("A malformed page path."),
		404: s.errorResponse("No enabled configuration has this domain id, or its organization is suspended."),
		429: s.retryLater("The path (or the crawler's platform) has no image yet and no new one may be made now: a cap of the configuration on new images (a UTC day, a billing period), the organization's OG share of its credits, its credits themselves, or this client address's 30 requests a minute for pages without an image. " +
			"One message for every reason, which says nothing of the organization's usage; Retry-After is when to ask again (the next UTC day or the billing period's end for a cap). Images already made keep being served."),
		502: s.errorResponse("The page could not be read or rendered, and it has no image yet; the message names the cause."),
		503: s.retryLater("The configuration's render budget (60 new renders a minute on each origin) is spent, and the path has no image yet."),
	}
}
