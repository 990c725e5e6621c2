package openapi

import (
	"cmp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Operation is the documentation of one route: its Doc in the route table
// (api.Route). The exported values of this package are every operation of
// the document; Build describes each against the document's components.
type Operation struct {
	id       string
	describe func(s *spec) operation
}

// OperationID is the operation's operationId.
func (o *Operation) OperationID() string { return o.id }

// described is every Operation of the package, in declaration order: Build
// fails when one is not in the table.
var described []*Operation

// describe declares an operation.
func describe(id string, f func(s *spec) operation) *Operation {
	o := &Operation{id: id, describe: f}
	described = append(described, o)
	return o
}

// operation documents one route of the table.
type operation struct {
	// path is the OpenAPI path when it is not the route's pattern: OpenAPI
	// forbids two paths that differ only in their parameters' names, so
	// routes sharing a shape share one path and its parameter names.
	path string
	// id is the Operation's, set by Build.
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
	{tagConnections, "Assistants connected to the MCP endpoint (OAuth grants), each acting as an API key."},
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
	tagConnections  = "MCP connections"
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

// templateIDParam is a template id in the path.
func templateIDParam(name string) *openapi3.Parameter {
	return pathParam(name, "The template id (t-...).", withPattern(templateIDPattern, str("")))
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

// Answers several operations share.

// notFound is a 404.
func (s *spec) notFound(what string) *openapi3.Response { return s.errorResponse(what) }

// planLimit is a 429 that waiting does not end.
func (s *spec) planLimit(what string) *openapi3.Response { return s.errorResponse(what) }

func (s *spec) invalid() *openapi3.Response {
	return s.errorResponse("Invalid request: validation_errors names every invalid field.")
}

func (s *spec) created() *openapi3.Response {
	return s.jsonResponse("The image: its URL answers once the image is rendered (rendering starts at once, in the background).", schImage)
}

// creation are the answers of an image creation.
func (s *spec) creation() map[int]*openapi3.Response {
	return map[int]*openapi3.Response{
		200: s.created(),
		400: s.invalid(),
		403: s.errorResponse("Missing permission; or proxy_id or storage_destination_id on a plan below 10,000 images a month."),
		404: s.notFound("A template, template version, proxy or storage destination named by the request is not the organization's."),
		429: s.planLimit("Plan limit exceeded: not enough image credits left in the billing period (error \"Plan limit exceeded\"). Waiting does not restore credits."),
	}
}

// served are the answers of an image's GET.
func (s *spec) served(what string) map[int]*openapi3.Response {
	return map[int]*openapi3.Response{
		200: s.imageResponse(what + " Content-Type follows the format: image/png, image/jpeg, image/webp or application/pdf. Cached for a year (public, immutable)."),
		206: s.imageResponse("Part of a PDF (one byte range; other formats are always sent whole)."),
		304: emptyResponse("Not modified (If-None-Match matched the ETag)."),
		400: s.errorResponse("An invalid transformation; or the render failed because of its input (selector not found, ScreenshotReady() never called, a refused address...). Render failures are not cached."),
		404: s.notFound("No such image, or its organization is suspended, or it is kept only in a storage destination."),
		412: s.errorResponse("A precondition (If-Match, If-Unmodified-Since) does not hold."),
		416: s.errorResponse("The range is not satisfiable."),
		502: s.errorResponse("The page could not be loaded (a name that does not resolve, a refused connection, a TLS failure, a failing proxy)."),
		503: s.retryLater("The render queue is full: try again after Retry-After."),
		504: s.errorResponse("The render outlived its deadline."),
	}
}

// templateCreation are the answers of an image creation from a template.
func (s *spec) templateCreation() map[int]*openapi3.Response {
	m := s.creation()
	m[400] = s.errorResponse("Invalid request; a template fault (runaway loop, memory, depth, output size, missing helper) names template_values.")
	m[404] = s.notFound("No such template or version in the organization, or a proxy or storage destination named that is not the organization's.")
	return m
}

// signed are the answers of a signed URL's GET.
func (s *spec) signed() map[int]*openapi3.Response {
	m := s.served("The image, created and charged on the URL's first GET and served afterwards.")
	m[401] = s.errorResponse("Invalid token: the signature does not match, or the key is unknown or disabled, or its organization suspended.")
	m[403] = s.errorResponse("The signing key lacks images:create (create-and-render), or proxy_id/storage_destination_id on a plan below 10,000 images a month.")
	m[429] = s.planLimit("Plan limit exceeded: not enough image credits left for a new image.")
	return m
}

// inFormat documents the route of a signed URL with a final /{format}:
// of's operation, answering in that format. Its path parameters are of's
// with {format} after the token, which is {token} as the route names it
// (of may share a path that names it otherwise); its query parameters
// are of's.
func inFormat(id string, of *Operation) *Operation {
	return describe(id, func(s *spec) operation {
		op := of.describe(s)
		op.path = ""
		op.summary += ", in a format"
		op.description = of.id + " with the format in the path."
		// of's parameters are its path ones, the token last, then its
		// query ones.
		q := slices.IndexFunc(op.params, func(p *openapi3.ParameterRef) bool { return p.Value.In != openapi3.ParameterInPath })
		if q < 0 {
			q = len(op.params)
		}
		token := *op.params[q-1].Value
		token.Name = "token"
		op.params = slices.Concat(op.params[:q-1], params(&token, formatParam()), op.params[q:])
		return op
	})
}

// planNote describes the resources of the larger plans.
const planNote = "Needs the 10,000 images/month plan or higher: below it every route of the resource answers 403 naming the plan, before the rate limit."

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

// resource is a collection of the organization's resources served by the
// standard routes: create, a list paged with the shared cursor, and get,
// update and delete of one by the {id} of its path. Each builds the
// operation from what the route says of its own (a crud) and the standard
// parameters and answers of its kind.
type resource struct {
	tag string
	// note ends the description of every operation (planNote), or is "".
	note string
	// name is the resource in the description of a UUID {id} (idParam),
	// whose malformed values answer 400.
	name string
	// id is the {id} parameter instead when the ids are not UUIDs: no
	// 400 then, an id of no resource is a 404 as any other.
	id func() *openapi3.Parameter
	// missing is the 404 of an {id} that is not the organization's.
	missing string
	// body describes the request body of create and update, of the
	// schema request as JSON and, when form names one, also as forms.
	body, request, form string
	// one and page are the schemas of a resource and of a page of them.
	one, page string
}

// crud is what one standard operation says of its own.
type crud struct {
	summary, description string
	// ok describes the success answer, of the resource's schema (its
	// page's for list) unless schema names another.
	ok, schema string
	// errors are further error answers by status, or ones replacing the
	// standard.
	errors map[int]string
}

// create is POST of a new resource.
func (r resource) create(c crud) func(s *spec) operation {
	return func(s *spec) operation {
		return r.complete(s, c, operation{body: r.requestBody(s), responses: map[int]*openapi3.Response{
			200: s.jsonResponse(c.ok, cmp.Or(c.schema, r.one)),
			400: s.invalid(),
		}})
	}
}

// list is GET of a page of the resources.
func (r resource) list(c crud) func(s *spec) operation {
	return func(s *spec) operation {
		return r.complete(s, c, operation{params: s.refs(parCount, parPageStart), responses: map[int]*openapi3.Response{
			200: s.jsonResponse(c.ok, cmp.Or(c.schema, r.page)),
			400: s.invalid(),
		}})
	}
}

// get is GET of one resource.
func (r resource) get(c crud) func(s *spec) operation {
	return func(s *spec) operation {
		return r.complete(s, c, r.byID(s, operation{responses: map[int]*openapi3.Response{
			200: s.jsonResponse(c.ok, cmp.Or(c.schema, r.one)),
		}}))
	}
}

// update is POST of a resource's new state.
func (r resource) update(c crud) func(s *spec) operation {
	return func(s *spec) operation {
		return r.complete(s, c, r.byID(s, operation{body: r.requestBody(s), responses: map[int]*openapi3.Response{
			200: s.jsonResponse(c.ok, cmp.Or(c.schema, r.one)),
			400: s.invalid(),
		}}))
	}
}

// delete is DELETE of a resource.
func (r resource) delete(c crud) func(s *spec) operation {
	return func(s *spec) operation {
		return r.complete(s, c, r.byID(s, operation{responses: map[int]*openapi3.Response{204: emptyResponse(c.ok)}}))
	}
}

// requestBody is the body of create and update.
func (r resource) requestBody(s *spec) *openapi3.RequestBody {
	if r.form == "" {
		return s.jsonBody(r.body, r.request)
	}
	return s.anyBody(r.body, r.request, r.form)
}

// byID adds the {id} parameter and its answers to op.
func (r resource) byID(s *spec, op operation) operation {
	if r.id != nil {
		op.params = params(r.id())
	} else {
		op.params = params(idParam(r.name))
		op.responses[400] = s.invalid()
	}
	op.responses[404] = s.notFound(r.missing)
	return op
}

// complete completes op with what c says.
func (r resource) complete(s *spec, c crud, op operation) operation {
	op.tag, op.summary = r.tag, c.summary
	op.description = strings.TrimSpace(c.description + " " + r.note)
	for status, description := range c.errors {
		op.responses[status] = s.errorResponse(description)
	}
	return op
}
