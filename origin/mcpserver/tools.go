package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/imageparams/schema"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/usage"
)

// Sentences the descriptions share.
const (
	credit     = " Consumes one image credit per new image (more with jumbo sizes); a plan out of credits refuses it."
	lazy       = " The image renders when its URL is first fetched; pass include_image: true to render it now and get the picture back."
	openBody   = " Unknown parameters are ignored, as by the REST API."
	validation = " A refusal names each invalid field as path: message."
	managed    = " Counts against the organization's per-minute limit for this resource (shared with the REST API); a refusal says which limit and when to retry."
	delivery   = " Needs the 10,000 images/month plan or higher."
)

// tools returns every tool of the server.
func tools() []*tool {
	var out []*tool
	add := func(t tool) { out = append(out, &t) }

	add(tool{name: "create_image", title: "Create image from HTML/CSS", permission: perm.ImagesCreate, twin: "POST /v1/image",
		description: "Render HTML and CSS into an image and return its permanent URL and id. An HTML snippet is cropped to its outermost element; a full document, or any render with viewport_width/viewport_height, uses the viewport (1920x1080 by default). device_scale (default 2) multiplies the pixel size. Returns PNG unless format says jpg, webp or pdf." +
			lazy + credit + " Needs images:create. Use create_url_image to capture a web page, create_templated_image to fill a saved template, create_batch_images for several images." + validation + openBody,
		input: imageArgs(forHTML, "html"), output: imageOut(), hints: hints{openWorld: true},
		run: createImage(htmlImage)})
	add(tool{name: "create_url_image", title: "Screenshot a web page", permission: perm.ImagesCreate, twin: "POST /v1/image",
		description: "Capture a screenshot of a public web page (http or https URL) and return the image's permanent URL and id. The viewport is 1920x1080 unless viewport_width/viewport_height say otherwise; full_screen captures the whole page, selector one element. Headers, cookie-banner blocking and waiting options control the capture." +
			lazy + credit + " Needs images:create." + validation + openBody,
		input: imageArgs(forURL, "url"), output: imageOut(), hints: hints{openWorld: true},
		run: createImage(urlImage)})
	add(tool{name: "create_templated_image", title: "Create image from a template", permission: perm.ImagesCreate, twin: "POST /v1/image/{template_id}[/{template_version}]",
		description: "Render a saved template (create_template, list_templates) filled with template_values and return the image's permanent URL and id. The latest version is used unless template_version names one; other parameters override the template's saved render defaults." +
			lazy + credit + " Needs images:create." + validation + openBody,
		input: templatedImageArgs(), output: imageOut(), hints: hints{openWorld: true},
		run: createImage(templatedImage)})
	add(tool{name: "create_batch_images", title: "Create images in a batch", permission: perm.ImagesCreate, twin: "POST /v1/image/batch",
		description: fmt.Sprintf("Create 1 to %d images in one call (get_max_batch_size): each variation is html, a url, or template values (template_id at the top level, in default_options or in the variation), laid over default_options. Every variation is validated before any image is created; the answer lists the images in order. Consumes one image credit per image (more with jumbo sizes); a plan without enough credits refuses the whole batch. No dedupe in batches. One MCP call carries at most %.2f MiB; larger batches go through the REST API (32 MiB).", maxBatch, float64(MaxMessageBytes)/(1<<20)) +
			lazy + " Needs images:create." + validation + openBody,
		input: batchArgs(), output: batchOut(), hints: hints{openWorld: true},
		run: createImage(batchImages)})
	add(tool{name: "get_max_batch_size", title: "Maximum batch size", permission: perm.ImagesCreate,
		description: fmt.Sprintf("The most images create_batch_images creates in one call (%d). Needs images:create.", maxBatch),
		input:       noArgs(),
		output: required(props("", "max_batch_size", &jsonschema.Schema{Type: "integer", Description: "The most variations in one create_batch_images call."}),
			"max_batch_size"),
		hints: hints{readOnly: true, idempotent: true}, run: maxBatchSize})

	add(restTool(tool{name: "create_template", title: "Create template", permission: perm.TemplatesCreateUpdate,
		description: "Save reusable HTML/CSS with Handlebars placeholders as a template (version 1) and return its template_id (t-...) and template_version; render it with create_templated_image. Any image creation parameter sent with it (viewport, device_scale, google_fonts, ...) becomes a render default of the template. The free plan holds 1 template, paid plans 1000. Needs templates:create_update." + validation + openBody,
		input:       templateArgs(false), output: templateSavedOut(), hints: hints{}},
		route{method: http.MethodPost, path: "/v1/template", body: fromArgs}))
	add(restTool(tool{name: "update_template", title: "Update template", permission: perm.TemplatesCreateUpdate,
		description: "Save a new version of a template (the whole template: html, css, name, description and render defaults; what is omitted is dropped). If the latest version never rendered an image it is replaced instead. Returns template_id and the saved template_version. Needs templates:create_update." + validation + openBody,
		input:       templateArgs(true), output: templateSavedOut(), hints: hints{idempotent: false}},
		route{method: http.MethodPost, path: "/v1/template/{id}", id: "template_id", body: fromArgs}))
	add(restTool(tool{name: "list_templates", title: "List templates", permission: perm.TemplatesRead,
		description: "List the organization's templates (latest version of each, with its html, css and render defaults), a page at a time. Needs templates:read.",
		input:       listArgs("templates"), output: listOut("templates", templateView()), hints: hints{readOnly: true, idempotent: true}},
		route{method: http.MethodGet, path: "/v1/template", query: []string{"count", "page_start"}}))
	add(restTool(tool{name: "list_template_versions", title: "List template versions", permission: perm.TemplatesRead,
		description: "List every version of one template, newest first. Needs templates:read.",
		input:       closed(required(props("", "template_id", templateIDArg()), "template_id")), output: listOut("versions", templateView()),
		hints: hints{readOnly: true, idempotent: true}},
		route{method: http.MethodGet, path: "/v1/template/{id}", id: "template_id"}))

	add(tool{name: "check_usage", title: "Check usage", permission: perm.UsageRead, twin: "GET /v1/usage",
		description: "How many image credits the organization used in the current billing period, how many its plan allows, and when they reset. Needs usage:read.",
		input:       noArgs(), output: usageOut(), hints: hints{readOnly: true, idempotent: true},
		run: checkUsage})

	resources := []struct {
		noun, plural, path string
		create, read, del  perm.Permission
		content, view      func() *jsonschema.Schema
		about, plan        string
	}{
		{noun: "proxy", plural: "proxies", path: "/v1/proxies",
			create: perm.ProxiesCreateUpdate, read: perm.ProxiesRead, del: perm.ProxiesDelete,
			content: proxyContent, view: proxyView, plan: delivery,
			about: "An HTTP(S) proxy that image renders can send their outbound traffic through (proxy_id of the image tools)."},
		{noun: "storage destination", plural: "storage destinations", path: "/v1/storage-destinations",
			create: perm.StorageDestinationsCreateUpdate, read: perm.StorageDestinationsRead, del: perm.StorageDestinationsDelete,
			content: destinationContent, view: destinationView, plan: delivery,
			about: "An S3-compatible bucket of the organization that rendered files are also written to (storage_destination_id of the image tools)."},
		{noun: "OG configuration", plural: "OG configurations", path: "/v1/og-configs",
			create: perm.OGConfigsCreateUpdate, read: perm.OGConfigsRead, del: perm.OGConfigsDelete,
			content: ogConfigContent, view: ogConfigView,
			about: "An OG configuration makes social-card (Open Graph) images for every page of a website, served at /v1/og/<domain_id>/<page path>."},
	}
	names := map[string][5]string{
		"proxy":               {"create_proxy", "get_proxy", "list_proxies", "update_proxy", "delete_proxy"},
		"storage destination": {"create_storage_destination", "get_storage_destination", "list_storage_destinations", "update_storage_destination", "delete_storage_destination"},
		"OG configuration":    {"create_og_config", "get_og_config", "list_og_configs", "update_og_config", "delete_og_config"},
	}
	for _, r := range resources {
		n := names[r.noun]
		from := n[2] + " or " + n[0]
		add(restTool(tool{name: n[0], title: "Create " + r.noun, permission: r.create,
			description: fmt.Sprintf("Create a %s; content is the request body. Returns the new %s with its id. %s Needs %s.%s%s Validation errors name fields of content.", r.noun, r.noun, r.about, r.create, r.plan, managed),
			input:       contentArgs(r.content()), output: r.view(), hints: hints{}},
			route{method: http.MethodPost, path: r.path, body: fromContent}))
		add(restTool(tool{name: n[1], title: "Get " + r.noun, permission: r.read,
			description: fmt.Sprintf("Get one %s by id. Needs %s.%s%s", r.noun, r.read, r.plan, managed),
			input:       idArgs(r.noun, from), output: r.view(), hints: hints{readOnly: true, idempotent: true}},
			route{method: http.MethodGet, path: r.path + "/{id}", id: "id"}))
		add(restTool(tool{name: n[2], title: "List " + r.plural, permission: r.read,
			description: fmt.Sprintf("List the organization's %s, newest first, disabled ones included, a page at a time. Needs %s.%s%s", r.plural, r.read, r.plan, managed),
			input:       listArgs(r.plural), output: listOut(r.plural, r.view()), hints: hints{readOnly: true, idempotent: true}},
			route{method: http.MethodGet, path: r.path, query: []string{"count", "page_start"}}))
		add(restTool(tool{name: n[3], title: "Update " + r.noun, permission: r.create,
			description: fmt.Sprintf("Replace a %s: content is the whole request body, as for %s (omitted fields take their defaults). Returns the updated %s. Needs %s.%s%s Validation errors name fields of content.", r.noun, n[0], r.noun, r.create, r.plan, managed),
			input:       idContentArgs(r.noun, from, r.content()), output: r.view(), hints: hints{destructive: true, idempotent: true}},
			route{method: http.MethodPost, path: r.path + "/{id}", id: "id", body: fromContent}))
		add(restTool(tool{name: n[4], title: "Delete " + r.noun, permission: r.del,
			description: fmt.Sprintf("Delete a %s for good. Images already made are not affected. Needs %s.%s%s", r.noun, r.del, r.plan, managed),
			input:       idArgs(r.noun, from), hints: hints{destructive: true, idempotent: true}},
			route{method: http.MethodDelete, path: r.path + "/{id}", id: "id"}))
	}
	add(restTool(tool{name: "get_aws_storage_external_id", title: "Get the AWS external id", permission: perm.StorageDestinationsRead,
		description: "The organization's external id for aws_s3 storage destinations: put it in the trust policy of the IAM role (role_arn) that Pictor assumes. It never changes. Needs storage_destinations:read." + delivery + managed,
		input:       noArgs(), output: required(props("", "external_id", schema.String("The external id.", nil)), "external_id"), hints: hints{readOnly: true, idempotent: true}},
		route{method: http.MethodGet, path: "/v1/storage-destinations/aws-external-id"}))
	return out
}

// maxBatchSize answers get_max_batch_size. It has no REST twin, so it
// checks the permission the batch route needs itself, in the router's words.
func maxBatchSize(_ context.Context, _ *Server, c *caller, a args) result {
	if err := a.only(); err != nil {
		return failure(err, c.requestID)
	}
	if !c.principal.Grant.Has(perm.ImagesCreate) {
		return failure(apierr.Forbidden("Missing permission: this operation requires %s", perm.ImagesCreate), c.requestID)
	}
	return success([]byte(fmt.Sprintf(`{"max_batch_size":%d}`, maxBatch)))
}

// checkUsage answers check_usage from GET /v1/usage: the current billing
// period's credits used, the plan's allowance and when the next period
// starts.
func checkUsage(ctx context.Context, s *Server, c *caller, a args) result {
	if err := a.only(); err != nil {
		return failure(err, c.requestID)
	}
	ans, err := s.do(ctx, c, http.MethodGet, "/v1/usage", nil, nil, maxAnswerBytes)
	if err != nil {
		return failure(err, c.requestID)
	}
	if res := s.relay(ans, c); res.IsError {
		return res
	}
	var rep usage.Report
	if err := json.Unmarshal(ans.body, &rep); err != nil || len(rep.PerBillingPeriod) == 0 || c.principal.Org == nil {
		return failure(fmt.Errorf("usage report without a current billing period: %.200s", ans.body), referenceOf(ans, c))
	}
	current := rep.PerBillingPeriod[len(rep.PerBillingPeriod)-1] // oldest first
	start, err := time.Parse(time.RFC3339, current.Start)
	if err != nil {
		return failure(fmt.Errorf("usage report: period start %q: %w", current.Start, err), referenceOf(ans, c))
	}
	o := c.principal.Org
	out, _ := json.Marshal(struct {
		ImagesUsed    int64  `json:"images_used"`
		ImagesAllowed int64  `json:"images_allowed"`
		NextReset     string `json:"next_reset"`
		Plan          string `json:"plan"`
	}{current.TotalImages, o.PlanInfo().Credits, usage.PeriodAt(o, start).End.UTC().Format(time.RFC3339), o.PlanInfo().Name})
	return success(out)
}
