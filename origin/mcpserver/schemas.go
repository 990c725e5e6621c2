package mcpserver

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/imageparams/schema"
	"github.com/pictorhq/pictor/origin/ogconfig"
)

// props builds an object schema from name/schema pairs, in order.
func props(description string, pairs ...any) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Description: description, Properties: map[string]*jsonschema.Schema{}}
	for i := 0; i < len(pairs); i += 2 {
		name := pairs[i].(string)
		s.Properties[name] = pairs[i+1].(*jsonschema.Schema)
		s.PropertyOrder = append(s.PropertyOrder, name)
	}
	return s
}

func required(s *jsonschema.Schema, names ...string) *jsonschema.Schema {
	s.Required = append(s.Required, names...)
	return s
}

// closed refuses properties s does not list: for the arguments a tool
// reads itself (REST ignores unknown fields of its bodies).
func closed(s *jsonschema.Schema) *jsonschema.Schema {
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return s
}

func arrayOf(description string, item *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: description, Items: item}
}

// Arguments shared by several tools.

func includeImage() *jsonschema.Schema {
	return schema.Boolean("Also return the rendered image as image content (PNG; JPG or WebP when the PNG is too large), so you can look at the result. Fetching it renders the image now. Images over the server's size budget (1 MiB by default for one result) are left out with a note.")
}

func idArg(what, from string) *jsonschema.Schema {
	return schema.String("Id of the "+what+" ("+from+").", "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d")
}

func templateIDArg() *jsonschema.Schema {
	return schema.WithPattern("^t-", schema.String("Id of the template (t-..., from create_template or list_templates).", "t-0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d"))
}

func listArgs(what string) *jsonschema.Schema {
	return closed(props("Arguments: one page of the organization's "+what+", newest first.",
		"count", schema.Integer(1, 100, "Page size, 1 to 100 (default 10).", 10),
		"page_start", schema.String("The next_page_start of the previous page, to continue the list; omit for the first page.", nil),
	))
}

func noArgs() *jsonschema.Schema {
	return closed(&jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}})
}

func idArgs(what, from string) *jsonschema.Schema {
	return closed(required(props("", "id", idArg(what, from)), "id"))
}

func contentArgs(content *jsonschema.Schema) *jsonschema.Schema {
	return closed(required(props("", "content", content), "content"))
}

func idContentArgs(what, from string, content *jsonschema.Schema) *jsonschema.Schema {
	return closed(required(props("", "id", idArg(what, from), "content", content), "id", "content"))
}

// imageArgs is the input of create_image (forHTML) or create_url_image
// (forURL).
func imageArgs(u use, source string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object"}
	s.Properties, s.PropertyOrder = imageProperties(u)
	s.Properties["include_image"] = includeImage()
	s.PropertyOrder = append(s.PropertyOrder, "include_image")
	return required(s, source)
}

func templatedImageArgs() *jsonschema.Schema {
	s := props("",
		"template_id", templateIDArg(),
		"template_version", schema.Integer(1, 1<<31-1, "Version to render (from list_template_versions); the latest when omitted.", 1),
		"template_values", imageParam("template_values"),
	)
	options, order := imageProperties(forTemplate)
	for _, name := range order {
		s.Properties[name] = options[name]
	}
	s.PropertyOrder = append(s.PropertyOrder, order...)
	s.Properties["include_image"] = includeImage()
	s.PropertyOrder = append(s.PropertyOrder, "include_image")
	return required(s, "template_id")
}

func batchArgs() *jsonschema.Schema {
	options := func(description string) *jsonschema.Schema {
		s := &jsonschema.Schema{Type: "object", Description: description}
		s.Properties, s.PropertyOrder = imageProperties(forBatch)
		return s
	}
	variations := arrayOf("The images to create, 1 to 25, in order: each an object of creation parameters (html, url, or template_id with template_values, plus options) laid over default_options (a field sent replaces the default's whole field).",
		options("One image's creation parameters."))
	variations.MinItems, variations.MaxItems = jsonschema.Ptr(1), jsonschema.Ptr(maxBatch)
	return required(props("",
		"variations", variations,
		"default_options", options("Creation parameters applied to every variation unless it sets them."),
		"template_id", schema.WithPattern("^t-", schema.String("Template for every variation that does not name its own (then each variation holds template_values).", "t-0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d")),
		"include_image", includeImage(),
	), "variations")
}

// templateArgs is the input of create_template, and of update_template
// with template_id.
func templateArgs(update bool) *jsonschema.Schema {
	s := props("")
	if update {
		s = props("", "template_id", templateIDArg())
	}
	s.Properties["html"] = schema.String("The template's HTML with Handlebars placeholders: {{var}} (HTML-escaped), {{{var}}} (raw), {{#if}}, {{#each}}, {{#with}}, {{else}}, dotted paths. Up to 5 MiB.",
		`<div style="padding:40px;font:48px sans-serif">{{title}}</div>`)
	s.Properties["css"] = schema.String("CSS for the HTML; may use placeholders too.", "div { color: #0b5; }")
	s.Properties["name"] = schema.WithMaxLength(64, schema.String("Name, up to 64 characters.", "Blog card"))
	s.Properties["description"] = schema.WithMaxLength(1024, schema.String("Description, up to 1024 characters.", "Social card for blog posts"))
	s.PropertyOrder = append(s.PropertyOrder, "html", "css", "name", "description")
	defaults, order := imageProperties(forDefaults)
	for _, name := range order {
		if name == "css" {
			continue
		}
		s.Properties[name] = defaults[name]
		s.PropertyOrder = append(s.PropertyOrder, name)
	}
	if update {
		return required(s, "template_id", "html")
	}
	return required(s, "html")
}

// Request bodies of the management resources (compat.md).

func proxyContent() *jsonschema.Schema {
	return required(props("The proxy request body (an update replaces the whole proxy: omitted fields take their defaults). Unknown fields are ignored.",
		"name", schema.String("Name, 3 to 500 characters.", "Office proxy"),
		"url", schema.WithFormat("uri", schema.String("The proxy's http or https URL: scheme and host only (no path, query or credentials), e.g. http://proxy.example.com. A port in it counts as port.", "http://proxy.example.com")),
		"port", schema.Integer(1, 65535, "Port, 1 to 65535; default 80 for http, 443 for https.", 3128),
		"disabled", schema.Boolean("true disables the proxy: images cannot be created through it (existing images are unaffected). Default false."),
		"authentication", props("Basic authentication for the proxy; omit or null for none.",
			"username", schema.WithMaxLength(255, schema.String("Username, up to 255 characters, without ':'.", "pictor")),
			"password", schema.WithMaxLength(255, schema.String("Password, up to 255 characters. Never shown again.", nil)),
			"retain_password", schema.Boolean("On an update, true keeps the stored password (send no password; the username, url and port must be unchanged)."),
		),
		"bypass_hosts", withMaxItems(100, schema.StringArray("Hosts reached directly, not through the proxy: names, IP addresses or wildcards *.example.com (subdomains only); at most 100.", []any{"*.internal.example.com"})),
	), "name", "url")
}

func destinationContent() *jsonschema.Schema {
	conn := required(props("Where and how to write: the bucket's provider and its settings. Settings of another provider are refused.",
		"provider", schema.Enum("The storage provider.", "aws_s3", "cloudflare_r2", "backblaze_b2", "digitalocean_spaces", "wasabi", "google_cloud_storage", "other_s3_compatible"),
		"bucket", schema.String("Bucket name (3 to 63 lower-case letters, digits, dots and hyphens).", "my-images"),
		"key_prefix", schema.String("Prefix of the object keys (folders), e.g. renders/2026; objects are <prefix>/<image id>.png.", "renders"),
		"region", schema.String("aws_s3, backblaze_b2, digitalocean_spaces, wasabi, other_s3_compatible: the bucket's region (other_s3_compatible: default us-east-1).", "us-east-1"),
		"role_arn", schema.String("aws_s3: ARN of the IAM role Pictor assumes (its trust policy names the external id of get_aws_storage_external_id).", "arn:aws:iam::123456789012:role/pictor-writer"),
		"cloudflare_account_id", schema.String("cloudflare_r2: the account id, 32 hexadecimal digits.", "0123456789abcdef0123456789abcdef"),
		"cloudflare_jurisdiction", schema.Nullable(schema.Enum("cloudflare_r2: data jurisdiction eu or fedramp; omit, null or default for the default one.", "default", "eu", "fedramp")),
		"endpoint", schema.WithFormat("uri", schema.String("other_s3_compatible: the S3 endpoint URL.", "https://s3.example.com")),
		"force_path_style", schema.Boolean("other_s3_compatible: address the bucket in the path, not the host name (default true)."),
		"access_key_id", schema.String("Every provider but aws_s3: the access key id.", "AKIAEXAMPLE"),
		"secret_access_key", schema.String("Every provider but aws_s3: the secret access key. Never shown again.", nil),
		"retain_secret_access_key", schema.Boolean("On an update, true keeps the stored secret (send no secret; provider, access_key_id and endpoint unchanged)."),
	), "provider", "bucket")
	return required(props("The storage destination request body (an update replaces the whole destination). Creating it, or changing its connection, writes a test object to the bucket; an enabled destination that fails the test is not saved. Unknown fields are ignored.",
		"name", schema.String("Name, 3 to 255 characters.", "Marketing bucket"),
		"disabled", schema.Boolean("true disables the destination. Default false."),
		"hcti_storage_disabled", schema.Boolean("true: Pictor keeps no copy; created images get a /v1/store/... URL that writes the file to the bucket when called with PUT and API key credentials. Default false (Pictor keeps its copy and also writes to the bucket)."),
		"connection_info", conn,
	), "name", "connection_info")
}

func ogConfigContent() *jsonschema.Schema {
	options := &jsonschema.Schema{Type: "object", Description: "Image creation parameters for every page's capture (the subset that shapes a capture; others are refused). Pages can override some with hcti:<param> meta tags.",
		Properties: map[string]*jsonschema.Schema{}}
	for _, name := range ogconfig.OptionNames {
		options.Properties[name] = imageParam(name)
		options.PropertyOrder = append(options.PropertyOrder, name)
	}
	mapping := props("One template value: from a page meta tag (meta_key) or a fallback; exactly one of the two.",
		"template_key", schema.String("The template variable.", "title"),
		"meta_key", schema.String("Name or property of the page's meta tag, e.g. og:title.", "og:title"),
		"fallback", schema.Enum("Use the page's best title or description.", "titles", "descriptions"),
	)
	return required(props("The OG configuration request body (an update replaces the whole configuration). Social-card images are then served at /v1/og/<domain_id>/<page path> for every page of base_url. At most one enabled configuration per base_url (409 otherwise). Unknown fields are ignored.",
		"config_type", schema.Enum("html_css: a screenshot of each page; templated: a template filled from each page's metadata.", "html_css", "templated"),
		"base_url", schema.WithFormat("uri", schema.String("Exact origin of the website (scheme://host[:port], no path).", "https://blog.example.com")),
		"name", schema.WithMaxLength(255, schema.String("Name, up to 255 characters.", "Blog cards")),
		"description", schema.WithMaxLength(1023, schema.String("Description, up to 1023 characters.", nil)),
		"disabled", schema.Boolean("true disables the configuration. Default false."),
		"refresh_interval_s", schema.Integer(60, 31536000, "How long a page's metadata is reused before it is checked again, in seconds: 60 to 31536000, default 86400.", 86400),
		"optimization_mode", schema.Enum("no_optimization, post_process (default: one render fitted to each platform's size) or set_viewport (one render per platform size).", "no_optimization", "post_process", "set_viewport"),
		"extract_values", schema.Boolean("Read the page's metadata (hcti: overrides, html:tv: template values, mapped meta tags). Default true."),
		"default_options", options,
		"template_id", templateIDArg(),
		"template_version", schema.Integer(1, 1<<31-1, "templated: the template version; the latest at render time when omitted.", 1),
		"template_values_mapping", withMaxItems(32, arrayOf("templated: where each template value comes from (at most 32).", mapping)),
		"headers", imageParam("headers"),
		"additional_header_origins", imageParam("additional_header_origins"),
	), "config_type", "base_url")
}

func withMaxItems(n int, s *jsonschema.Schema) *jsonschema.Schema {
	s.MaxItems = jsonschema.Ptr(n)
	return s
}

// Outputs.

var errorBodySchema = required(props("A refusal: the REST error body.",
	"error", schema.String("Status text or category.", "Bad Request"),
	"message", schema.String("What went wrong.", nil),
	"statusCode", &jsonschema.Schema{Type: "integer", Description: "The REST status code."},
	"validation_errors", arrayOf("The invalid fields.", required(props("",
		"path", schema.String("The field, e.g. viewport_width or variations[2].url.", nil),
		"message", schema.String("Why it is invalid.", nil),
	), "path", "message")),
), "error", "message", "statusCode")

func timestamp(what string) *jsonschema.Schema {
	return schema.String(what+" (RFC 3339, UTC).", nil)
}

func imageOut() *jsonschema.Schema {
	return required(props("An image.",
		"url", schema.WithFormat("uri", schema.String("The image's permanent URL; change its extension (.png, .jpg, .webp, .pdf) for another format. A /v1/store/... URL (destination without Pictor storage) writes the file to the bucket when called with PUT and API key credentials.", nil)),
		"id", schema.String("The image id.", nil),
	), "url", "id")
}

func batchOut() *jsonschema.Schema {
	return required(props("", "images", arrayOf("The images, in the order of the variations.", imageOut())), "images")
}

func listOut(what string, item *jsonschema.Schema) *jsonschema.Schema {
	return required(props("",
		"data", arrayOf("The "+what+", newest first.", item),
		"pagination", required(props("",
			"next_page_start", schema.Nullable(schema.String("Pass as page_start for the next page; null on the last page.", nil)),
		), "next_page_start"),
	), "data", "pagination")
}

func templateSavedOut() *jsonschema.Schema {
	return required(props("",
		"template_id", schema.String("The template id (t-...).", nil),
		"template_version", &jsonschema.Schema{Type: "integer", Description: "The version saved."},
	), "template_id", "template_version")
}

func templateView() *jsonschema.Schema {
	return required(props("A template version.",
		"id", schema.String("The template id.", nil),
		"version", &jsonschema.Schema{Type: "integer"},
		"name", schema.String("", nil), "description", schema.String("", nil), "html", schema.String("", nil), "css", schema.String("", nil),
		"device_scale", schema.Nullable(&jsonschema.Schema{Type: "number"}),
		"google_fonts", schema.Nullable(schema.String("", nil)),
		"ms_delay", schema.Nullable(&jsonschema.Schema{Type: "integer"}),
		"max_wait_ms", schema.Nullable(&jsonschema.Schema{Type: "integer"}),
		"render_when_ready", schema.Boolean(""),
		"viewport_width", schema.Nullable(&jsonschema.Schema{Type: "integer"}),
		"viewport_height", schema.Nullable(&jsonschema.Schema{Type: "integer"}),
		"color_scheme", schema.Nullable(schema.String("", nil)),
		"timezone", schema.Nullable(schema.String("", nil)),
		"storage_destination_id", schema.Nullable(schema.String("", nil)),
		"render_count", &jsonschema.Schema{Type: "integer", Description: "Images made from this version."},
		"created_at", timestamp("Created"), "updated_at", timestamp("Updated"),
	), "id", "version")
}

func usageOut() *jsonschema.Schema {
	return required(props("",
		"images_used", &jsonschema.Schema{Type: "integer", Description: "Image credits used in the current billing period."},
		"images_allowed", &jsonschema.Schema{Type: "integer", Description: "Image credits of the plan per billing period."},
		"next_reset", timestamp("When the next billing period starts and credits reset"),
		"plan", schema.String("The organization's plan.", nil),
	), "images_used", "images_allowed", "next_reset")
}

func proxyView() *jsonschema.Schema {
	return required(props("A proxy (never its password).",
		"id", schema.String("", nil), "name", schema.String("", nil), "url", schema.String("", nil),
		"port", &jsonschema.Schema{Type: "integer"},
		"bypass_hosts", schema.StringArray("", nil),
		"username", schema.Nullable(schema.String("", nil)),
		"enabled", schema.Boolean(""),
		"created_at", timestamp("Created"), "updated_at", timestamp("Updated"),
	), "id", "name", "url", "port", "enabled")
}

func destinationView() *jsonschema.Schema {
	return required(props("A storage destination (never its secret).",
		"id", schema.String("", nil), "name", schema.String("", nil),
		"enabled", schema.Boolean(""),
		"hcti_storage_disabled", schema.Boolean(""),
		"connection_info", &jsonschema.Schema{Type: "object", Description: "The provider and its settings."},
		"last_tested_at", schema.Nullable(timestamp("Last connection test")),
		"last_test_succeeded", schema.Nullable(schema.Boolean("")),
		"last_test_error", schema.Nullable(schema.String("", nil)),
		"created_at", timestamp("Created"), "updated_at", timestamp("Updated"),
	), "id", "name", "enabled", "connection_info")
}

func ogConfigView() *jsonschema.Schema {
	return required(props("An OG configuration.",
		"id", schema.String("", nil),
		"domain_id", schema.String("The public id in /v1/og/<domain_id>/<page path>.", nil),
		"config_type", schema.String("", nil), "name", schema.String("", nil), "description", schema.String("", nil), "base_url", schema.String("", nil),
		"enabled", schema.Boolean(""),
		"refresh_interval_s", &jsonschema.Schema{Type: "integer"},
		"optimization_mode", schema.String("", nil),
		"extract_values", schema.Boolean(""),
		"default_options", &jsonschema.Schema{Type: "object"},
		"template_id", schema.Nullable(schema.String("", nil)),
		"template_version", schema.Nullable(&jsonschema.Schema{Type: "integer"}),
		"template_values_mapping", &jsonschema.Schema{Type: "array"},
		"headers", &jsonschema.Schema{Type: "object"},
		"additional_header_origins", schema.StringArray("", nil),
		"created_at", timestamp("Created"), "updated_at", timestamp("Updated"),
	), "id", "domain_id", "config_type", "base_url", "enabled")
}
