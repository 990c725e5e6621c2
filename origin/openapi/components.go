package openapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/imageparams/schema"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/proxy"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/storedest"
	"github.com/pictorhq/pictor/origin/template"
)

// Limits of packages this one does not import (origin/rendition and
// origin/contract/imaging link libvips); origin/openapi_test.go holds them
// to the originals.
const (
	// MaxBatch is images.MaxBatch: variations of one batch (spec §8).
	MaxBatch = 25
	// MaxDeleteBatch is images.MaxDeleteBatch: ids of one batch delete.
	MaxDeleteBatch = 1000
	// MaxImageList is the largest count of GET /v1/images (compat.md), also
	// its default.
	MaxImageList = 50
	// MaxResize is imaging.MaxSize: GET width and height.
	MaxResize = 5000
	// MinDPI and MaxDPI are imaging.MinDPI and imaging.MaxDPI.
	MinDPI, MaxDPI = 30, 600
	// MaxCropPixels is imaging.MaxPixels: a crop coordinate or size in pixels.
	MaxCropPixels = 1_000_000
	// MaxRatioTerm is imaging.MaxRatioTerm: each side of aspect_ratio.
	MaxRatioTerm = 100_000
)

// Component names.
const (
	basicAuth = "basicAuth"
)

// spec holds the document's components while it is built.
type spec struct {
	components openapi3.Components
}

func newSpec() *spec {
	s := &spec{components: openapi3.NewComponents()}
	s.components.Schemas = openapi3.Schemas{}
	s.components.Headers = openapi3.Headers{}
	s.components.Parameters = openapi3.ParametersMap{}
	s.components.SecuritySchemes = openapi3.SecuritySchemes{
		basicAuth: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
			Type: "http", Scheme: "basic",
			Description: "An API key: its api_id as the user name, its api_key secret as the password. " +
				"Missing, invalid or disabled credentials answer 401; a key without the operation's permission 403.",
		}},
	}
	return s
}

// schema registers a component schema and returns a reference to it.
func (s *spec) schema(name string, v *openapi3.Schema) *openapi3.SchemaRef {
	if _, dup := s.components.Schemas[name]; dup {
		panic("openapi: schema " + name + " twice")
	}
	s.components.Schemas[name] = openapi3.NewSchemaRef("", v)
	return openapi3.NewSchemaRef("#/components/schemas/"+name, v)
}

// ref returns a reference to a registered component schema.
func (s *spec) ref(name string) *openapi3.SchemaRef {
	v, ok := s.components.Schemas[name]
	if !ok {
		panic("openapi: no schema " + name)
	}
	return openapi3.NewSchemaRef("#/components/schemas/"+name, v.Value)
}

// header registers a component header.
func (s *spec) header(name string, h *openapi3.Header) {
	s.components.Headers[name] = &openapi3.HeaderRef{Value: h}
}

// headerRef returns a reference to a registered component header.
func (s *spec) headerRef(name string) *openapi3.HeaderRef {
	h, ok := s.components.Headers[name]
	if !ok {
		panic("openapi: no header " + name)
	}
	return &openapi3.HeaderRef{Ref: "#/components/headers/" + name, Value: h.Value}
}

// param registers a component parameter.
func (s *spec) param(name string, p *openapi3.Parameter) {
	s.components.Parameters[name] = &openapi3.ParameterRef{Value: p}
}

// paramRef returns a reference to a registered component parameter.
func (s *spec) paramRef(name string) *openapi3.ParameterRef {
	p, ok := s.components.Parameters[name]
	if !ok {
		panic("openapi: no parameter " + name)
	}
	return &openapi3.ParameterRef{Ref: "#/components/parameters/" + name, Value: p.Value}
}

func headerOf(description string, required bool, v *openapi3.Schema) *openapi3.Header {
	return &openapi3.Header{Parameter: openapi3.Parameter{Description: description, Required: required,
		Schema: openapi3.NewSchemaRef("", v)}}
}

// Component names of the shared schemas.
const (
	schError         = "Error"
	schFieldError    = "ValidationError"
	schImage         = "Image"
	schStoreResult   = "StoreResult"
	schObjectResult  = "StoreObjectResult"
	schPagination    = "Pagination"
	schImageParams   = "ImageParameters"
	schTemplateValue = "TemplateValues"
)

// define registers every shared component.
func (s *spec) define() {
	s.defineErrors()
	s.defineHeaders()
	s.defineParameters()
	s.defineImages()
	s.defineTemplates()
	s.defineKeys()
	s.defineProxies()
	s.defineDestinations()
	s.defineOGConfigs()
	s.defineOGRefresh()
	s.defineOGPreview()
	s.defineOAuthGrants()
	s.defineSignTemplate()
}

func (s *spec) defineErrors() {
	fe := s.schema(schFieldError, object("One invalid request field.",
		req("path", withExamples(str("The field: a name, a dotted path into an object or an indexed path into an array (viewport_width, pdf_options.scale, variations[2].url, ids[0])."), "viewport_width")),
		req("message", withExamples(str("Why the value is refused."), "must be between 1 and 6000")),
	))
	s.schema(schError, withExamples(object("The standard error body of every failed request.",
		req("error", withExamples(str("The status text, or a category such as \"Plan limit exceeded\"."), "Bad Request")),
		req("message", withExamples(str("What went wrong, for people."), "Invalid request: viewport_width must be between 1 and 6000")),
		req("statusCode", integer(400, 599, "The HTTP status code.")),
		opt("validation_errors", withItems(1, 0, arrayOf("Every invalid field, on a 400 caused by request fields. Absent otherwise.", fe))),
	), map[string]any{
		"error": "Bad Request", "message": "Invalid request: viewport_width must be between 1 and 6000", "statusCode": 400,
		"validation_errors": []any{map[string]any{"path": "viewport_width", "message": "must be between 1 and 6000"}},
	}))
	s.schema(schPagination, object("Where the next page starts.",
		req("next_page_start", nullable(str("Pass as page_start to read the next page; null on the last page (the server looks one item ahead)."))),
	))
}

// Header names.
const (
	hdrRateLimitPolicy = "RateLimit-Policy"
	hdrRateLimit       = "RateLimit"
	hdrRetryAfter      = "Retry-After"
	hdrRendersAllowed  = "x-renders-allowed"
	hdrRendersConsumed = "x-renders-consumed"
	hdrRendersUsed     = "x-renders-used"
	hdrWWWAuthenticate = "WWW-Authenticate"
	hdrETag            = "ETag"
	hdrCacheControl    = "Cache-Control"
	hdrDisposition     = "Content-Disposition"
	hdrServerTiming    = "Server-Timing"
)

func (s *spec) defineHeaders() {
	alt := strings.Join(stringsOf([]ratelimit.Group{ratelimit.APIKeyRead, ratelimit.APIKeyWrite, ratelimit.ProxyRead, ratelimit.ProxyWrite,
		ratelimit.StorageDestinationRead, ratelimit.StorageDestinationWrite, ratelimit.OGConfigRead, ratelimit.OGConfigWrite}), "|")
	window := int(ratelimit.Window.Seconds())
	s.header(hdrRateLimitPolicy, headerOf(fmt.Sprintf("The operation group's policy: its name, q the quota (%d reads or %d writes per organization) and w the window in seconds (%d, sliding).",
		ratelimit.ReadQuota, ratelimit.WriteQuota, window), false,
		withExamples(withPattern(`^"(`+alt+`)";q=[0-9]+;w=[0-9]+$`, str("")), fmt.Sprintf(`"proxy:read";q=%d;w=%d`, ratelimit.ReadQuota, window))))
	s.header(hdrRateLimit, headerOf("What is left of the group's allowance: its name and r the requests remaining in the window.", false,
		withExamples(withPattern(`^"(`+alt+`)";r=[0-9]+$`, str("")), `"proxy:read";r=99`)))
	s.header(hdrRetryAfter, headerOf("Seconds to wait before trying again. Without it, wait 60 seconds.", false, integer(0, 1<<31-1, "")))
	s.header(hdrRendersAllowed, headerOf("Image credits of the billing period.", false, count("")))
	s.header(hdrRendersConsumed, headerOf("Image credits this request consumed: 0 for a reused (deduplicated) image, more than 1 for a jumbo image.", false, count("")))
	s.header(hdrRendersUsed, headerOf("Image credits used so far in the billing period, this request included.", false, count("")))
	s.header(hdrWWWAuthenticate, headerOf("The Basic authentication challenge.", false, withExamples(str(""), `Basic realm="pictor"`)))
	s.header(hdrETag, headerOf("Strong entity tag of the image; send it back in If-None-Match.", false, str("")))
	s.header(hdrCacheControl, headerOf("How long caches may keep the answer.", false, str("")))
	s.header(hdrDisposition, headerOf("attachment, with dl=1.", false, str("")))
	s.header(hdrServerTiming, headerOf("The time spent rendering, in milliseconds: render;dur=<ms>.", false,
		withExamples(withPattern(`^render;dur=[0-9]+(\.[0-9]+)?$`, str("")), "render;dur=412.5")))
}

// Parameter names of components.
const (
	parCount     = "count"
	parPageStart = "page_start"
)

func (s *spec) defineParameters() {
	s.param(parCount, &openapi3.Parameter{Name: "count", In: openapi3.ParameterInQuery,
		Description: fmt.Sprintf("Page size, 1 to %d (default %d).", cursor.MaxCount, cursor.DefaultCount),
		Schema:      openapi3.NewSchemaRef("", withDefault(cursor.DefaultCount, integer(1, cursor.MaxCount, "")))})
	s.param(parPageStart, &openapi3.Parameter{Name: "page_start", In: openapi3.ParameterInQuery,
		Description: "The next_page_start of the previous page; omit (or send empty) for the first page. A cursor not issued by this API for this list is a 400 naming page_start.",
		Schema:      openapi3.NewSchemaRef("", str(""))})
	for _, p := range transformParams() {
		s.param(p.Name, p)
	}
}

// transformParams are the GET-time transformations (origin/contract/imaging):
// they apply to GET /v1/image/{id} and PUT /v1/store/{id}.
func transformParams() []*openapi3.Parameter {
	length := func(name, description string) *openapi3.Parameter {
		return query(name, description+fmt.Sprintf(" Pixels (0 to %d) or a percentage of the image (0%% to 100%%, up to four decimals), e.g. 120 or 33%%.", MaxCropPixels),
			withExamples(withPattern(`^([0-9]+|[0-9]{1,3}(\.[0-9]+)?%)$`, str("")), "33%"))
	}
	origin := func(name, axis, size, p1, p2 string) *openapi3.Parameter {
		return query(name, fmt.Sprintf("Aligns along the %s axis a crop whose size comes from %s or aspect_ratio: start, center (default) or end. Not with %s or %s.", axis, size, p1, p2),
			enum("", "start", "center", "end"))
	}
	return []*openapi3.Parameter{
		query("width", fmt.Sprintf("Resize to this width, 1 to %d pixels (0: not set). Alone it keeps the aspect ratio; with height the image covers the box and the overflow is cropped evenly. Not for PDF.", MaxResize),
			integer(0, MaxResize, "")),
		query("height", fmt.Sprintf("Resize to this height, 1 to %d pixels (0: not set). Not for PDF.", MaxResize), integer(0, MaxResize, "")),
		query("dpi", fmt.Sprintf("Density written in the metadata only (PNG pHYs, JPEG JFIF; WebP has none), %d to %d. Not for PDF.", MinDPI, MaxDPI), integer(MinDPI, MaxDPI, "")),
		query("dl", "1 (or true, on) answers with Content-Disposition: attachment; 0 (or false, off) does not.",
			enum("", "1", "0", "true", "false", "on", "off")),
		query("aspect_ratio", fmt.Sprintf("Crop to this aspect ratio, W_H (or W:H) of positive integers up to %d, e.g. 16_9 or 1_1; centered unless x_origin/y_origin or coordinates say otherwise. Not with both a crop width and a crop height. Not for PDF.", MaxRatioTerm),
			withExamples(withPattern(`^[0-9]+[_:][0-9]+$`, str("")), "16_9")),
		length("x_1", "Left edge of the crop. Not for PDF."),
		length("x_2", "Right edge of the crop, greater than x_1. Not for PDF."),
		length("y_1", "Top edge of the crop. Not for PDF."),
		length("y_2", "Bottom edge of the crop, greater than y_1. Not for PDF."),
		length("crop_width", "Width of the crop, greater than 0; not with both x_1 and x_2. Not for PDF."),
		length("crop_height", "Height of the crop, greater than 0; not with both y_1 and y_2. Not for PDF."),
		origin("x_origin", "horizontal", "crop_width", "x_1", "x_2"),
		origin("y_origin", "vertical", "crop_height", "y_1", "y_2"),
	}
}

func query(name, description string, v *openapi3.Schema) *openapi3.Parameter {
	return &openapi3.Parameter{Name: name, In: openapi3.ParameterInQuery, Description: description, Schema: openapi3.NewSchemaRef("", v)}
}

func pathParam(name, description string, v *openapi3.Schema) *openapi3.Parameter {
	return &openapi3.Parameter{Name: name, In: openapi3.ParameterInPath, Required: true, Description: description, Schema: openapi3.NewSchemaRef("", v)}
}

// Image schemas.

const (
	schImageBatch     = "ImageBatch"
	schBatchRequest   = "BatchRequest"
	schBatchItem      = "BatchVariation"
	schDeleteRequest  = "DeleteImagesRequest"
	schImageList      = "ImageList"
	schImageInfo      = "ImageInfo"
	schUsage          = "Usage"
	schImageForm      = "ImageParametersForm"
	schTemplateRender = "TemplateRenderParameters"
	schTemplateForm   = "TemplateRenderParametersForm"
	schPreviewRequest = "PreviewRequest"
	schPreviewForm    = "PreviewRequestForm"
)

// uuidPattern is an id as the API writes it (UUIDs are read in any case).
const uuidPattern = `^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`

// templateIDPattern is a template id.
const templateIDPattern = `^t-.+$`

// imageParameters returns the schemas of the image creation parameters of
// use, converted from the shared table, and their names in its order.
func imageParameters(u schema.Use) (openapi3.Schemas, []string) {
	props, order := schema.Properties(u)
	out := openapi3.Schemas{}
	for name, js := range props {
		out[name] = openapi3.NewSchemaRef("", fromJSONSchema(js))
	}
	return out, order
}

func imageParameter(name string) *openapi3.Schema { return fromJSONSchema(schema.Lookup(name)) }

func templateVersion(description string) *openapi3.Schema {
	return integer(1, ogconfig.MaxTemplateVersion, description)
}

func (s *spec) defineImages() {
	s.schema(schImage, withExamples(object("An image.",
		req("url", uri("The image's address: /v1/image/<id>, with .jpg, .webp or .pdf when format asked for one (change the extension for another format; none or .png is PNG). "+
			"For a storage destination with hcti_storage_disabled it is a /v1/store/<id> address instead, which a PUT with the organization's credentials renders and writes to the bucket.")),
		req("id", uuidString("The image id.")),
	), map[string]any{"url": "https://api.example.com/v1/image/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d"}))
	s.schema(schImageBatch, object("The created images.",
		req("images", arrayOf("One image per variation, in the order of the variations.", s.ref(schImage))),
	))

	// POST /v1/image: every parameter of the table.
	all, _ := imageParameters(schema.Everywhere | schema.ForHTML | schema.ForURL | schema.ForBatch)
	all["template_version"] = openapi3.NewSchemaRef("", templateVersion("With template_id: the template version to render; the latest when omitted."))
	create := open(typed(openapi3.TypeObject, "Image creation parameters (spec §2.2). Send html, url, or template_id (with template_values); "+
		"url wins over html, and template_id cannot be combined with either. Numbers and booleans may also be written as strings, and null counts as not sent. Unknown fields are ignored."))
	create.Properties = all
	create.Examples = []any{map[string]any{"html": `<div class="card">Hello</div>`, "css": ".card { padding: 40px; font: 48px sans-serif; }", "google_fonts": "Roboto"}}
	s.schema(schImageParams, create)
	form := formSchema(create, "Image creation parameters as a form (application/x-www-form-urlencoded or multipart/form-data): numbers and booleans as text, "+
		"template_values, pdf_options and metadata JSON-encoded, headers repeated as Name:value (or one JSON-encoded object), additional_header_origins repeated (or one JSON-encoded array). An empty value counts as not sent.")
	form.Properties["headers"] = openapi3.NewSchemaRef("", formHeaders())
	s.schema(schImageForm, form)

	// POST /v1/image/{template_id}[/{template_version}].
	tpl, _ := imageParameters(schema.ForTemplate)
	tpl["template_values"] = openapi3.NewSchemaRef("", imageParameter("template_values"))
	tpl["template_version"] = openapi3.NewSchemaRef("", templateVersion("The template version to render when the path names none; the latest when omitted."))
	render := open(typed(openapi3.TypeObject, "Values for the template and options laid over its render defaults. A field that is no option but a variable of the template is refused (400 naming it: its value belongs in template_values); other unknown fields are ignored."))
	render.Properties = tpl
	render.Examples = []any{map[string]any{"template_values": map[string]any{"title": "Launch day"}}}
	s.schema(schTemplateRender, render)
	rform := formSchema(render, "The same as a form: template_values (and every object) JSON-encoded, numbers and booleans as text.")
	rform.Properties["headers"] = openapi3.NewSchemaRef("", formHeaders())
	s.schema(schTemplateForm, rform)

	// POST /v1/image/preview: a creation, or a draft template.
	pv, _ := imageParameters(schema.Everywhere | schema.ForHTML | schema.ForURL | schema.ForBatch)
	pv["template_version"] = openapi3.NewSchemaRef("", templateVersion("With template_id: the template version to render; the latest when omitted."))
	draft := open(typed(openapi3.TypeObject, "A template not saved: what createTemplate takes (html required, css, name, description, render defaults), "+
		"validated as a save is, with validation_errors named template.<field>. Cannot be combined with html, url, template_id or template_version."))
	draft.Examples = []any{map[string]any{"html": "{{title}}", "css": "body { font: 64px sans-serif; }", "viewport_width": 1200, "viewport_height": 630}}
	pv["template"] = openapi3.NewSchemaRef("", draft)
	preview := open(typed(openapi3.TypeObject, "What createImage takes (html, url, or template_id with template_values, and every option), "+
		"or a draft template (template) with template_values and options laid over its render defaults. Unknown fields are ignored."))
	preview.Properties = pv
	preview.Examples = []any{map[string]any{"template": map[string]any{"html": `<h1>{{title}}</h1>`}, "template_values": map[string]any{"title": "Launch day"}, "format": "webp"}}
	s.schema(schPreviewRequest, preview)
	pform := formSchema(preview, "The same as a form: template, template_values and every object JSON-encoded, numbers and booleans as text.")
	pform.Properties["headers"] = openapi3.NewSchemaRef("", formHeaders())
	s.schema(schPreviewForm, pform)

	// POST /v1/image/batch.
	item, _ := imageParameters(schema.ForBatch)
	item["template_version"] = openapi3.NewSchemaRef("", templateVersion("With template_id: the template version; the latest when omitted."))
	variation := open(typed(openapi3.TypeObject, "One image's creation parameters, laid over default_options (a field sent replaces the default's whole field): html, url, or template_id with template_values, plus options."))
	variation.Properties = item
	s.schema(schBatchItem, variation)
	s.schema(schBatchRequest, withExamples(open(object(fmt.Sprintf("Up to %d images at once: every variation is validated before anything is created, then all are created and charged together. No dedupe.", MaxBatch),
		reqRef("variations", openapi3.NewSchemaRef("", withItems(1, MaxBatch, arrayOf(fmt.Sprintf("The images to create, 1 to %d, in order.", MaxBatch), s.ref(schBatchItem))))),
		optRef("default_options", s.ref(schBatchItem)),
		opt("template_id", withPattern(templateIDPattern, str("Template of every variation that names none (each then holds its template_values)."))),
	)), map[string]any{
		"default_options": map[string]any{"viewport_width": 1200, "viewport_height": 630},
		"variations":      []any{map[string]any{"html": "<h1>One</h1>"}, map[string]any{"url": "https://example.com/"}},
	}))
	s.schema(schDeleteRequest, withExamples(open(object("Images to delete.",
		req("ids", withItems(0, MaxDeleteBatch, array(fmt.Sprintf("Image ids (without extension), at most %d. Unknown ids and other organizations' ids are skipped.", MaxDeleteBatch),
			withPattern(uuidPattern, str(""))))),
	)), map[string]any{"ids": []any{"0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d"}}))

	s.schema(schImageList, object("One page of the organization's images, newest first.",
		req("images", arrayOf("The images.", openapi3.NewSchemaRef("", object("An image.",
			req("id", uuidString("The image id.")),
			req("url", uri("The image's address (the /v1/store/... address for a destination without Pictor storage).")),
			req("created_at", timestamp("When it was created")),
		)))),
		req("next_page_token", nullable(str("Pass as page_token for the next page; null on the last page."))),
		req("has_next_page", boolean("Whether another page follows.")),
	))

	s.schema(schImageInfo, object("An image of the organization.",
		req("id", uuidString("The image id.")),
		req("url", uri("The image's address (the /v1/store/... address for a destination without Pictor storage).")),
		req("created_at", timestamp("When it was created")),
		req("state", enum("pending until the first render, ready, or failed (failure says why).", "pending", "ready", "failed")),
		opt("failure", str("Why the render failed.")),
		opt("width", count("The master's width in pixels, once rendered.")),
		opt("height", count("The master's height in pixels, once rendered.")),
		req("format", enum("The format it was created with.", "png", "jpg", "webp", "pdf")),
		req("credits", count("Image credits it was charged.")),
		req("storage_only", boolean("Its storage destination keeps no Pictor copy: url is the store address.")),
		req("parameters", open(object("The creation parameters, defaults resolved, in request field names: itself a valid POST /v1/image body."))),
		req("files", arrayOf("Every format it is served in, the created one first.", openapi3.NewSchemaRef("", object("A format of the image.",
			req("format", enum("The format.", "png", "jpg", "webp", "pdf")),
			req("url", uri("Its address; the GET query transforms it.")),
			opt("size", count("Its stored size in bytes, once stored.")),
		)))),
	))

	bucket := func(what string) *openapi3.Schema {
		m := typed(openapi3.TypeObject, "Credits used per "+what+", keyed by the bucket's start (RFC 3339, UTC). Buckets without usage may be left out.")
		m.AdditionalProperties = openapi3.AdditionalProperties{Schema: openapi3.NewSchemaRef("", count(""))}
		m.PropertyNames = openapi3.NewSchemaRef("", formatted("date-time", ""))
		return m
	}
	s.schema(schUsage, withExamples(object("Image credits used by the organization.",
		req("data", object("Credits by UTC hour (the last 72), day (60) and month (12).",
			req("hour", bucket("hour")), req("day", bucket("day")), req("month", bucket("month")))),
		req("per_billing_period", withItems(1, 0, array("Every billing period since the organization was created, oldest first; the last is the current one.", object("A billing period.",
			req("total_images", count("Credits used in the period.")),
			req("start", formatted("date-time", "Start of the period (RFC 3339, UTC).")),
			req("end", nullable(formatted("date-time", "End of the period (RFC 3339, UTC); null for the current one."))),
		)))),
	), map[string]any{
		"data":               map[string]any{"hour": map[string]any{"2026-03-14T15:00:00Z": 3}, "day": map[string]any{"2026-03-14T00:00:00Z": 3}, "month": map[string]any{"2026-03-01T00:00:00Z": 3}},
		"per_billing_period": []any{map[string]any{"total_images": 3, "start": "2026-03-01T12:00:00Z", "end": nil}},
	}))

	or := s.schema(schObjectResult, object("What became of one object.",
		req("status", enum("stored: written now; already_stored: written before (same bucket and key); failed; not_attempted (the base failed first).", "stored", "already_stored", "failed", "not_attempted")),
		req("target", enum("Where it goes: the organization's storage destination (storage_destination), or Pictor's own storage (hcti_storage).", "storage_destination", "hcti_storage")),
		opt("bucket", str("The bucket written to.")),
		opt("key", str("The object key: <prefix>/<id>.png (.pdf with pdf_options) for the base, <prefix>/<id>_<transformation>.<ext> for a transformation.")),
	))
	s.schema(schStoreResult, withExamples(object("The result of a store upload (spec §2.7).",
		req("outcome", enum("complete (200), partial (424: the base was stored, the transformation not) or failed (424: the base was not stored).", "complete", "partial", "failed")),
		reqRef("baseResult", or),
		optRef("transformationResult", or),
		req("success", boolean("Whether the outcome is complete.")),
		req("message", str("What happened, for people.")),
		req("statusCode", enum200or424()),
		opt("error", str("Why the upload is incomplete (absent when complete).")),
		opt("referenceId", str("The request id, to quote to support (absent when complete).")),
	), map[string]any{
		"outcome": "complete", "success": true, "message": "Stored", "statusCode": 200,
		"baseResult": map[string]any{"status": "stored", "target": "storage_destination", "bucket": "my-images", "key": "renders/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d.png"},
	}))
}

func enum200or424() *openapi3.Schema {
	s := typed(openapi3.TypeInteger, "The HTTP status of the answer: 200 or 424.")
	s.Enum = []any{200, 424}
	return s
}

// formHeaders is headers in a form: repeated Name:value fields, or one
// JSON-encoded object.
func formHeaders() *openapi3.Schema {
	s := withItems(0, 0, array("Custom HTTP headers for url captures (at most 20 names, case-insensitive), sent only to the url's origin and additional_header_origins: "+
		"the field repeated as Name:value, or once holding a JSON-encoded object of names to values.", str("")))
	s.Examples = []any{[]any{"Authorization:Bearer preview-token"}}
	return s
}

// Templates.

const (
	schTemplateRequest = "TemplateRequest"
	schTemplateFormReq = "TemplateRequestForm"
	schTemplateSaved   = "TemplateSaved"
	schTemplate        = "Template"
	schTemplateList    = "TemplateList"
)

func (s *spec) defineTemplates() {
	defaults, order := imageParameters(schema.ForDefaults)
	props := openapi3.Schemas{
		"html":        openapi3.NewSchemaRef("", withLength(0, imageparams.MaxHTMLBytes, str("The template's HTML with Handlebars placeholders: {{var}} (HTML-escaped), {{{var}}} (raw), {{#if}}, {{#each}}, {{#with}}, {{else}}, dotted paths, {{!comments}}. Up to 5 MiB."))),
		"css":         openapi3.NewSchemaRef("", str("CSS for the HTML; may hold placeholders too.")),
		"name":        openapi3.NewSchemaRef("", withLength(0, template.MaxName, str(fmt.Sprintf("Name, up to %d characters.", template.MaxName)))),
		"description": openapi3.NewSchemaRef("", withLength(0, template.MaxDescription, str(fmt.Sprintf("Description, up to %d characters.", template.MaxDescription)))),
	}
	for _, name := range order {
		if _, own := props[name]; !own {
			props[name] = defaults[name]
		}
	}
	body := open(typed(openapi3.TypeObject, "A template: html (required), css, name, description and render defaults (any image creation option), checked when saved; a syntax error, or a call of a helper the sandbox lacks (it has Handlebars' built-in helpers only), names the field, line and column. Unknown fields are ignored."))
	body.Properties = props
	body.Required = []string{"html"}
	body.Examples = []any{map[string]any{"html": `<div class="card">{{title}}</div>`, "css": ".card { font: 48px sans-serif; }", "name": "Blog card", "viewport_width": 1200, "viewport_height": 630}}
	s.schema(schTemplateRequest, body)
	form := formSchema(body, "The same as a form: numbers and booleans as text, objects JSON-encoded, headers repeated as Name:value.")
	form.Properties["headers"] = openapi3.NewSchemaRef("", formHeaders())
	s.schema(schTemplateFormReq, form)
	s.schema(schTemplateSaved, withExamples(object("The saved version.",
		req("template_id", withPattern(templateIDPattern, str("The template id."))),
		req("template_version", integer(1, ogconfig.MaxTemplateVersion, "The version saved.")),
	), map[string]any{"template_id": "t-0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "template_version": 1}))
	num := func(t, description string) *openapi3.Schema { return nullable(typed(t, description)) }
	s.schema(schTemplate, object("A template version.",
		req("id", withPattern(templateIDPattern, str("The template id."))),
		req("version", integer(1, ogconfig.MaxTemplateVersion, "The version.")),
		req("name", str("Name (empty when none).")),
		req("description", str("Description (empty when none).")),
		req("html", str("The HTML.")),
		req("css", str("The CSS (empty when none).")),
		req("device_scale", num(openapi3.TypeNumber, "Render default; null when not set.")),
		req("google_fonts", num(openapi3.TypeString, "Render default; null when not set.")),
		req("ms_delay", num(openapi3.TypeInteger, "Render default; null when not set.")),
		req("max_wait_ms", num(openapi3.TypeInteger, "Render default; null when not set.")),
		req("render_when_ready", boolean("Render default.")),
		req("viewport_width", num(openapi3.TypeInteger, "Render default; null when not set.")),
		req("viewport_height", num(openapi3.TypeInteger, "Render default; null when not set.")),
		req("color_scheme", num(openapi3.TypeString, "Render default; null when not set.")),
		req("timezone", num(openapi3.TypeString, "Render default; null when not set.")),
		req("storage_destination_id", num(openapi3.TypeString, "Render default; null when not set.")),
		req("render_count", count("Images made from this version.")),
		req("render_defaults", open(typed(openapi3.TypeObject, "Every render default of the version as saved (the image creation options sent with it), of which the fields above show some: send them again to keep them in a new version."))),
		req("created_at", timestamp("When the version was created")),
		req("updated_at", timestamp("When the version last changed")),
	))
	s.listEnvelope(schTemplateList, "Template versions (spec §2.5 list envelope).", "The versions.", schTemplate)
}

// API keys.

const (
	schKey        = "APIKey"
	schKeyCreated = "APIKeyCreated"
	schKeyRequest = "APIKeyRequest"
	schKeyList    = "APIKeyList"
	schPermission = "Permission"
)

func (s *spec) defineKeys() {
	p := s.schema(schPermission, enum("A permission name (spec §2.4).", stringsOf(perm.All())...))
	view := func(description string, secret bool) *openapi3.Schema {
		members := []member{
			req("id", uuidString("The key's id, used in /v1/api-keys/{id}.")),
			req("api_id", uuidString("The Basic authentication user name.")),
		}
		if secret {
			members = append(members, req("api_key", withPattern("^[0-9a-f]{48}$", str("The secret: the Basic authentication password. Shown only here, never again."))))
		}
		members = append(members,
			req("name", withLength(0, apikey.MaxName, str("Name; \"Key created <UTC creation time>\" when none was given."))),
			opt("description", withLength(1, apikey.MaxDescription, str("Description; absent when none."))),
			req("enabled", boolean("Whether the key can authenticate.")),
			reqRef("permissions", openapi3.NewSchemaRef("", arrayOf("The granted permissions, sorted; every current permission for an all-future key.", p))),
			req("all_future_permissions", boolean("Whether the key also receives permissions added in the future.")),
			req("created_at", timestamp("When the key was created")),
			req("updated_at", timestamp("When the key last changed")),
		)
		return object(description, members...)
	}
	example := map[string]any{
		"id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "api_id": "4a8f2e1c-3b5d-4e6f-8a9b-0c1d2e3f4a5b", "name": "CI",
		"enabled": true, "permissions": []any{"images:create", "images:read"}, "all_future_permissions": false,
		"created_at": "2026-03-14T15:09:26.000Z", "updated_at": "2026-03-14T15:09:26.000Z",
	}
	s.schema(schKey, withExamples(view("An API key, without its secret.", false), example))
	created := map[string]any{"api_key": strings.Repeat("0f", 24)}
	for k, v := range example {
		created[k] = v
	}
	s.schema(schKeyCreated, withExamples(view("A new API key with its secret, shown only this once.", true), created))
	s.schema(schKeyRequest, withExamples(open(object("A key request; create and update take the same, and an update replaces the whole key (omitted fields take their defaults, the secret is kept). "+
		"Types are strict. Unknown fields are ignored.",
		opt("name", nullable(withLength(0, apikey.MaxName, str(fmt.Sprintf("Up to %d characters. Omitted, null or blank: \"Key created\" and the key's creation time in UTC (YYYY-MM-DD HH:mm:ss).", apikey.MaxName))))),
		opt("description", nullable(withLength(0, apikey.MaxDescription, str(fmt.Sprintf("Up to %d characters. Omitted, null or blank clears it.", apikey.MaxDescription))))),
		opt("disabled", withDefault(false, boolean("true disables the key (no secret rotation; false enables it again with the same credentials)."))),
		reqRef("permissions", openapi3.NewSchemaRef("", arrayOf("The complete list of permissions to grant, no broader than the caller's own; empty with all_future_permissions. Duplicates are merged.", p))),
		opt("all_future_permissions", withDefault(false, boolean("true grants every current and future permission; send permissions as []. Only an all-future key may grant it."))),
	)), map[string]any{"name": "CI", "permissions": []any{"images:create", "images:read"}}))
	s.listEnvelope(schKeyList, "One page of API keys, newest first (spec §2.5 list envelope). Secrets are never listed.", "The keys.", schKey)
}

// Proxies.

const (
	schProxy        = "Proxy"
	schProxyRequest = "ProxyRequest"
	schProxyForm    = "ProxyRequestForm"
	schProxyList    = "ProxyList"
)

func (s *spec) defineProxies() {
	s.schema(schProxy, withExamples(object("A proxy (never its password).",
		req("id", uuidString("The proxy id.")),
		req("name", str("Name.")),
		req("url", uri("scheme://host, lower-case, without port.")),
		req("port", integer(1, 65535, "Port.")),
		req("bypass_hosts", array("Hosts reached directly.", str(""))),
		req("username", nullable(str("Basic authentication user name; null when none."))),
		req("enabled", boolean("Whether images can be created through it.")),
		req("created_at", timestamp("When it was created")),
		req("updated_at", timestamp("When it last changed")),
	), map[string]any{"id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "name": "Office proxy", "url": "http://proxy.example.com", "port": 3128,
		"bypass_hosts": []any{"*.internal.example.com"}, "username": "pictor", "enabled": true,
		"created_at": "2026-03-14T15:09:26.000Z", "updated_at": "2026-03-14T15:09:26.000Z"}))
	body := open(object("A proxy request (an update replaces the whole proxy: omitted fields take their defaults, and an update without authentication removes the credentials). "+
		"JSON types are strict. Unknown fields are ignored.",
		req("name", withLength(proxy.MinName, proxy.MaxName, str(fmt.Sprintf("Name, %d to %d characters after trimming, no control characters.", proxy.MinName, proxy.MaxName)))),
		req("url", uri("The proxy's http or https URL: scheme and host only (no path, query, fragment or credentials). A port in it counts as port. Loopback, private and metadata addresses are refused.")),
		opt("port", integer(1, 65535, fmt.Sprintf("Port, 1 to 65535; default %d for http, %d for https. When url names a port too, they must match.", proxy.DefaultHTTPPort, proxy.DefaultHTTPSPort))),
		opt("disabled", withDefault(false, boolean("true disables the proxy: new images cannot use it (existing images are unaffected)."))),
		opt("authentication", nullable(open(object("Basic authentication for the proxy; omit or null for none.",
			opt("username", withLength(0, proxy.MaxUsername, str(fmt.Sprintf("User name, up to %d characters, without ':' or control characters.", proxy.MaxUsername)))),
			opt("password", withLength(0, proxy.MaxPassword, str(fmt.Sprintf("Password, up to %d characters; needs username. Never shown again.", proxy.MaxPassword)))),
			opt("retain_password", boolean("On an update, true keeps the stored password: send no password, and keep the username, url and port.")),
		)))),
		opt("bypass_hosts", withItems(0, proxy.MaxBypassHosts, array(fmt.Sprintf("Hosts reached directly, at most %d: host names (that host only), IP addresses, or *.name (every subdomain, not name itself). Lower-cased and deduplicated.", proxy.MaxBypassHosts), str("")))),
	))
	body.Examples = []any{map[string]any{"name": "Office proxy", "url": "http://proxy.example.com", "port": 3128,
		"authentication": map[string]any{"username": "pictor", "password": "s3cret"}, "bypass_hosts": []any{"*.internal.example.com"}}}
	s.schema(schProxyRequest, body)
	s.schema(schProxyForm, formSchema(body, "The same as a form: numbers and booleans as text, authentication JSON-encoded, bypass_hosts repeated (or one JSON-encoded array). An empty value counts as not sent."))
	s.listEnvelope(schProxyList, "One page of proxies, newest first, disabled ones included (spec §2.5 list envelope).", "The proxies.", schProxy)
}

// Storage destinations.

const (
	schDest        = "StorageDestination"
	schDestRequest = "StorageDestinationRequest"
	schDestList    = "StorageDestinationList"
	schExternalID  = "AWSExternalID"
)

func (s *spec) defineDestinations() {
	region := "aws_s3, backblaze_b2, digitalocean_spaces, wasabi: the bucket's region (required; Wasabi and Spaces from their published lists); other_s3_compatible: the signing region (default " + storedest.DefaultRegion + ")."
	s.schema(schDest, withExamples(object("A storage destination (never its secret).",
		req("id", uuidString("The destination id.")),
		req("name", str("Name.")),
		req("enabled", boolean("Whether new images can use it.")),
		req("hcti_storage_disabled", boolean("true: Pictor keeps no copy of its images; they get /v1/store/... URLs.")),
		req("connection_info", object("The provider and its settings, without secrets.",
			req("provider", enum("The storage provider.", stringsOf(storedest.Providers)...)),
			req("bucket", str("Bucket name.")),
			req("key_prefix", nullable(str("Prefix of the object keys; null at the bucket's root."))),
			opt("region", str(region)),
			opt("role_arn", str("aws_s3: the IAM role Pictor assumes.")),
			opt("cloudflare_account_id", str("cloudflare_r2: the account id.")),
			opt("cloudflare_jurisdiction", nullable(enum("cloudflare_r2: eu or fedramp; null for the default jurisdiction.", "eu", "fedramp"))),
			opt("endpoint", uri("other_s3_compatible: the S3 endpoint.")),
			opt("force_path_style", boolean("other_s3_compatible: whether the bucket is addressed in the path.")),
			opt("access_key_id", str("Every provider but aws_s3: the access key id.")),
		)),
		req("last_tested_at", nullable(timestamp("When the connection was last tested; null if never"))),
		req("last_test_succeeded", nullable(boolean("Whether that test succeeded; null if never tested."))),
		req("last_test_error", nullable(withLength(0, storedest.MaxTestError, str("Why the last test failed, in the provider's words (secrets blanked out); null unless it failed.")))),
		req("created_at", timestamp("When it was created")),
		req("updated_at", timestamp("When it last changed")),
	), map[string]any{"id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "name": "Marketing bucket", "enabled": true, "hcti_storage_disabled": false,
		"connection_info": map[string]any{"provider": "aws_s3", "bucket": "my-images", "key_prefix": "renders", "region": "us-east-1", "role_arn": "arn:aws:iam::123456789012:role/pictor-writer"},
		"last_tested_at":  "2026-03-14T15:09:26.000Z", "last_test_succeeded": true, "last_test_error": nil,
		"created_at": "2026-03-14T15:09:26.000Z", "updated_at": "2026-03-14T15:09:26.000Z"}))
	conn := open(object("Where and how to write: the provider and its settings. A setting of another provider sent with a value is a 400 naming it; null means not sent.",
		req("provider", enum("The storage provider.", stringsOf(storedest.Providers)...)),
		req("bucket", withLength(storedest.MinBucket, storedest.MaxBucket, str("Bucket name (S3's general-purpose naming rules)."))),
		opt("key_prefix", nullable(str(fmt.Sprintf("Prefix of the object keys (objects are <prefix>/<image id>.png): slashes at the ends dropped, runs collapsed, no . or .. segments, at most %d bytes; null or omitted for the bucket's root.", storedest.MaxKeyPrefix)))),
		opt("region", nullable(withLength(0, storedest.MaxRegion, str(region)))),
		opt("role_arn", nullable(withLength(0, storedest.MaxRoleARN, str("aws_s3 (required): ARN of the IAM role Pictor assumes, arn:aws:iam::<account>:role/<name>, in the partition of region; its trust policy names the external id of GET /v1/storage-destinations/aws-external-id.")))),
		opt("cloudflare_account_id", nullable(withPattern("^[0-9A-Fa-f]{32}$", str("cloudflare_r2 (required): the account id, 32 hexadecimal digits.")))),
		opt("cloudflare_jurisdiction", nullable(enum("cloudflare_r2: eu or fedramp; default or null for the default jurisdiction.", "default", "eu", "fedramp"))),
		opt("endpoint", nullable(withLength(0, storedest.MaxEndpoint, uri("other_s3_compatible (required): the absolute http(s) URL of the S3 API. Private, loopback and metadata addresses are refused.")))),
		opt("force_path_style", nullable(withDefault(true, boolean("other_s3_compatible: address the bucket in the path, not the host name (default true)).")))),
		opt("access_key_id", nullable(withLength(0, storedest.MaxAccessKeyID, str("Every provider but aws_s3 (required): the access key id.")))),
		opt("secret_access_key", nullable(withLength(0, storedest.MaxSecret, str("Every provider but aws_s3: the secret access key (required, except on an update with retain_secret_access_key). Never shown again.")))),
		opt("retain_secret_access_key", nullable(boolean("On an update, true keeps the stored secret: send no secret, and keep the provider, access_key_id and (other_s3_compatible) endpoint."))),
	))
	s.schema(schDestRequest, withExamples(open(object("A storage destination request (JSON only; an update replaces the whole destination). Creating it, or changing its connection, writes a test object under <prefix>/.hcti/connection-tests/; "+
		"an enabled destination whose test fails is not saved (400 naming connection_info). Types are strict. Unknown fields are ignored.",
		req("name", withLength(storedest.MinName, storedest.MaxName, str(fmt.Sprintf("Name, %d to %d characters after trimming.", storedest.MinName, storedest.MaxName)))),
		opt("disabled", nullable(withDefault(false, boolean("true disables the destination.")))),
		opt("hcti_storage_disabled", nullable(withDefault(false, boolean("true: Pictor keeps no copy; images created with it get a /v1/store/... URL that renders and writes them when called with PUT. Default false: Pictor keeps its copy and also writes to the bucket.")))),
		reqRef("connection_info", openapi3.NewSchemaRef("", conn)),
	)), map[string]any{"name": "Marketing bucket", "connection_info": map[string]any{"provider": "cloudflare_r2", "bucket": "my-images",
		"cloudflare_account_id": "0123456789abcdef0123456789abcdef", "access_key_id": "AKIAEXAMPLE", "secret_access_key": "s3cret"}}))
	s.listEnvelope(schDestList, "One page of storage destinations, newest first, disabled ones included (spec §2.5 list envelope).", "The destinations.", schDest)
	s.schema(schExternalID, withExamples(object("The organization's external id for aws_s3 roles.",
		req("external_id", withPattern("^pictor-[a-z2-7]+$", str("Name it as sts:ExternalId in the role's trust policy. Fixed per organization."))),
	), map[string]any{"external_id": "pictor-abcdefghijklmnopqrstuvwxyz"}))
}

// OG configurations.

const (
	schOG          = "OGConfig"
	schOGRequest   = "OGConfigRequest"
	schOGForm      = "OGConfigRequestForm"
	schOGList      = "OGConfigList"
	schOGOptions   = "OGDefaultOptions"
	schOGMapping   = "TemplateValuesMapping"
	schOGMappingIn = "TemplateValuesMappingRequest"
	schOGLimits    = "OGConfigLimits"
)

func (s *spec) defineOGConfigs() {
	options := typed(openapi3.TypeObject, "Image creation options for every page's capture: the subset that shapes a capture (other creation parameters are refused, names that are no parameter ignored). Pages can override some with hcti:<param> meta tags.")
	options.Properties = openapi3.Schemas{}
	for _, name := range ogconfig.OptionNames {
		options.Properties[name] = openapi3.NewSchemaRef("", imageParameter(name))
	}
	no := false
	answer := *options
	answer.Description = "The capture options, normalised: what equals the default is left out."
	answer.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
	optionsOut := s.schema(schOGOptions, &answer)
	mappingOut := s.schema(schOGMapping, object("Where one template value comes from: a meta tag (meta_key) or a fallback.",
		req("template_key", str("The template variable.")),
		opt("meta_key", str("Name or property of the page's meta tag.")),
		opt("fallback", enum("The page's best title or description.", string(ogconfig.FallbackTitles), string(ogconfig.FallbackDescriptions))),
	))
	mappingIn := s.schema(schOGMappingIn, open(object("Where one template value comes from: exactly one of meta_key and fallback.",
		req("template_key", withLength(1, ogconfig.MaxTemplateKeyLength, str(fmt.Sprintf("The template variable, up to %d characters, each mapped once.", ogconfig.MaxTemplateKeyLength)))),
		opt("meta_key", withLength(1, ogconfig.MaxMetaKeyLength, str(fmt.Sprintf("Name or property of the page's meta tag, e.g. og:title (no spaces, up to %d characters).", ogconfig.MaxMetaKeyLength)))),
		opt("fallback", enum("Use the page's best title or description.", string(ogconfig.FallbackTitles), string(ogconfig.FallbackDescriptions))),
	)))
	types := []string{string(ogconfig.HTMLCSS), string(ogconfig.Templated)}
	modes := []string{string(ogconfig.NoOptimization), string(ogconfig.PostProcess), string(ogconfig.SetViewport)}
	minRefresh, maxRefresh := int64(ogconfig.MinRefreshInterval.Seconds()), int64(ogconfig.MaxRefreshInterval.Seconds())
	limits := object(fmt.Sprintf("Read only: the caps on new images in force (max_new_images_* when set, else the plan's defaults) and what was counted against them. "+
		"A new image is an OG creation that charges credits: a new path, another platform's variant, a changed page or content_version, a new revision of the configuration. "+
		"Past a cap, paths without an image answer 429 (the images made are still served). Whatever the caps say, all OG images of the organization together spend at most %d %% of the plan's credits in a billing period.",
		ogconfig.OrgSharePercent),
		req("new_images_per_day", count("New images the configuration may make in a UTC day.")),
		req("new_images_per_period", count("New images the configuration may make in the organization's billing period.")),
		req("used_today", count("New images made today (UTC).")),
		req("used_this_period", count("New images made in the current billing period.")),
		req("organization_og_credits_per_period", count(fmt.Sprintf("Credits all the organization's OG images may spend in a billing period: %d %% of the plan's.", ogconfig.OrgSharePercent))),
		req("organization_og_credits_used_this_period", count("Credits the organization's OG images spent in the current billing period.")),
	)
	limits.ReadOnly = true
	limitsOut := s.schema(schOGLimits, limits)
	perDay := fmt.Sprintf("New images (OG creations that charge credits) the configuration may make in a UTC day: 0 to the plan's credits per billing period (400 above); 0 serves only images that exist. "+
		"null or omitted: the default, a tenth of the period cap rounded up and at least %d.", ogconfig.MinDefaultPerDay)
	perPeriod := fmt.Sprintf("New images the configuration may make in the organization's billing period: 0 to the plan's credits per billing period (400 above); 0 serves only images that exist. "+
		"null or omitted: the default, %d %% of the plan's credits rounded up.", ogconfig.DefaultPeriodPercent)
	s.schema(schOG, withExamples(object("An OG configuration.",
		req("id", uuidString("The configuration id.")),
		req("domain_id", withPattern("^[a-z2-7]{26}$", str("The public id in /v1/og/<domain_id>/<page path>, fixed for life."))),
		req("config_type", enum("html_css: a screenshot of each page; templated: a template filled from each page's metadata.", types...)),
		req("name", str("Name (empty when none).")),
		req("description", str("Description (empty when none).")),
		req("base_url", uri("The site's exact origin, scheme://host[:port], lower-case.")),
		req("enabled", boolean("Whether its images are served.")),
		req("refresh_interval_s", integer(minRefresh, maxRefresh, "How long a page's metadata is reused, in seconds.")),
		req("optimization_mode", enum("How images fit each platform.", modes...)),
		req("extract_values", boolean("Whether the page's metadata is read.")),
		reqRef("default_options", optionsOut),
		req("template_id", nullable(withPattern(templateIDPattern, str("templated: the template; null otherwise.")))),
		req("template_version", nullable(templateVersion("templated: the version; null for the latest at render time."))),
		req("template_values_mapping", arrayOf("templated: where each template value comes from.", mappingOut)),
		req("headers", stringMap("Custom headers sent to base_url's origin and additional_header_origins when pages are read and rendered.")),
		req("additional_header_origins", array("Origins that also receive the custom headers.", str(""))),
		req("max_new_images_per_day", nullable(count("The cap on new images a UTC day as set; null: the default (limits shows the number in force)."))),
		req("max_new_images_per_period", nullable(count("The cap on new images a billing period as set; null: the default (limits shows the number in force)."))),
		reqRef("limits", limitsOut),
		req("created_at", timestamp("When it was created")),
		req("updated_at", timestamp("When it last changed")),
	), map[string]any{"id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "domain_id": "abcdefghijklmnopqrstuvwxyz", "config_type": "html_css",
		"name": "Blog cards", "description": "", "base_url": "https://blog.example.com", "enabled": true, "refresh_interval_s": 86400,
		"optimization_mode": "post_process", "extract_values": true, "default_options": map[string]any{"viewport_width": 1200, "viewport_height": 630},
		"template_id": nil, "template_version": nil, "template_values_mapping": []any{}, "headers": map[string]any{}, "additional_header_origins": []any{},
		"max_new_images_per_day": nil, "max_new_images_per_period": 150,
		"limits": map[string]any{"new_images_per_day": 15, "new_images_per_period": 150, "used_today": 3, "used_this_period": 41,
			"organization_og_credits_per_period": 500, "organization_og_credits_used_this_period": 41},
		"created_at": "2026-03-14T15:09:26.000Z", "updated_at": "2026-03-14T15:09:26.000Z"}))
	body := open(object(fmt.Sprintf("An OG configuration request (an update replaces the whole configuration). Images are then served at /v1/og/<domain_id>/<page path> for every page of base_url. "+
		"At most one enabled configuration per base_url in an organization (409 otherwise). JSON types are strict; enumerations are exact lower-case values. Unknown fields are ignored."),
		req("config_type", enum("html_css: a screenshot of each page; templated: a template filled from each page's metadata.", types...)),
		req("base_url", uri("Exact origin of the site: http(s)://host[:port], ASCII host (xn-- form), at most a / after it. Loopback, private and metadata addresses are refused.")),
		opt("name", withLength(0, ogconfig.MaxName, str(fmt.Sprintf("Name, up to %d characters.", ogconfig.MaxName)))),
		opt("description", withLength(0, ogconfig.MaxDescription, str(fmt.Sprintf("Description, up to %d characters.", ogconfig.MaxDescription)))),
		opt("disabled", withDefault(false, boolean("true disables the configuration: its images are not served."))),
		opt("refresh_interval_s", withDefault(int64(ogconfig.DefaultRefreshInterval.Seconds()), integer(minRefresh, maxRefresh, "How long a page's metadata is reused before it is read again, in seconds (a page's own Cache-Control can extend it)."))),
		opt("optimization_mode", withDefault(string(ogconfig.PostProcess), enum("no_optimization: one image; post_process: one render fitted to each platform's size; set_viewport: one render per platform size.", modes...))),
		opt("extract_values", withDefault(true, boolean("Read the page's metadata: hcti: overrides, html:tv: template values, mapped meta tags."))),
		opt("default_options", open(options)),
		opt("template_id", nullable(withLength(0, imageparams.MaxIDLength, withPattern(templateIDPattern, str("templated (required): the template; html_css refuses it."))))),
		opt("template_version", nullable(templateVersion("templated: the version; the latest at render time when omitted. html_css refuses it."))),
		opt("template_values_mapping", withItems(0, ogconfig.MaxMappings, arrayOf(fmt.Sprintf("templated: where each template value comes from, at most %d; html_css refuses a non-empty list.", ogconfig.MaxMappings), mappingIn))),
		opt("headers", imageParameter("headers")),
		opt("additional_header_origins", imageParameter("additional_header_origins")),
		opt("max_new_images_per_day", nullable(integer(0, ogconfig.MaxNewImages, perDay))),
		opt("max_new_images_per_period", nullable(integer(0, ogconfig.MaxNewImages, perPeriod))),
	))
	body.Examples = []any{map[string]any{"config_type": "templated", "base_url": "https://blog.example.com", "template_id": "t-0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d",
		"template_values_mapping": []any{map[string]any{"template_key": "title", "meta_key": "og:title"}, map[string]any{"template_key": "subtitle", "fallback": "descriptions"}}}}
	s.schema(schOGRequest, body)
	form := formSchema(body, "The same as a form: numbers and booleans as text, default_options and template_values_mapping JSON-encoded, headers repeated as Name:value. An empty value counts as not sent.")
	form.Properties["headers"] = openapi3.NewSchemaRef("", formHeaders())
	s.schema(schOGForm, form)
	s.listEnvelope(schOGList, "One page of OG configurations, newest first, disabled ones included (spec §2.5 list envelope).", "The configurations.", schOG)
}

// listEnvelope registers the schema of a page of a list (spec §2.5 list
// envelope): its data are items of the schema of (data describes them),
// its pagination where the next page starts.
func (s *spec) listEnvelope(name, description, data, of string) {
	s.schema(name, object(description,
		req("data", arrayOf(data, s.ref(of))),
		reqRef("pagination", s.ref(schPagination)),
	))
}

// stringsOf is the values as strings.
func stringsOf[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
