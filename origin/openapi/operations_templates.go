package openapi

import "github.com/getkin/kin-openapi/openapi3"

// The operations of templates and the images made from them: each is a
// route's Doc in the origin's table.

// RenderTemplate documents POST /v1/image/{template_id}.
var RenderTemplate = describe("renderTemplate", func(s *spec) operation {
	return operation{
		path: "/v1/image/{id}",
		tag:  tagTemplates, summary: "Create an image from a template",
		description: "Renders the template's latest version (or template_version) with template_values, its render defaults under the request's options. The result is an ordinary HTML image.",
		params:      params(templateIDParam("id")),
		body:        s.anyBody("Template values and options.", schTemplateRender, schTemplateForm),
		responses:   s.templateCreation(),
		renders:     true,
	}
})

// RenderTemplateVersion documents POST /v1/image/{template_id}/{template_version}.
var RenderTemplateVersion = describe("renderTemplateVersion", func(s *spec) operation {
	op := RenderTemplate.describe(s)
	op.path, op.summary = "/v1/image/{template_id}/{version_or_token}", "Create an image from a template version"
	op.description = "renderTemplate with the version in the path."
	op.params = params(templateIDParam("template_id"),
		pathParam("version_or_token", "The template version, a positive integer (anything else is a 400 naming template_version).", withPattern("^[1-9][0-9]*$", str(""))))
	op.body = s.anyBody("Template values and options (template_version in the body is ignored).", schTemplateRender, schTemplateForm)
	op.responses[400] = s.errorResponse("Invalid request; a template fault names template_values.")
	return op
})

// RenderSignedTemplate documents GET /v1/image/{template_id}/{token}.
var RenderSignedTemplate = describe("renderSignedTemplate", func(s *spec) operation {
	return operation{
		path: "/v1/image/{template_id}/{version_or_token}",
		tag:  tagSigned, summary: "Render a template from a signed URL",
		description: "Each query parameter is a template value; template_version picks a version (the latest when absent). Any enabled key of the template's organization holding images:create may have signed it. " +
			"Changing or deleting the template, or disabling the key, purges what the URL produced.",
		params: append(params(templateIDParam("template_id"),
			pathParam("version_or_token", tokenParam().Description, withPattern("^[0-9A-Fa-f]{64}$", str("")))), templateQuery()),
		responses: s.signed(), renders: true,
	}
})

// RenderSignedTemplateAs documents GET /v1/image/{template_id}/{token}/{format}.
var RenderSignedTemplateAs = inFormat("renderSignedTemplateAs", RenderSignedTemplate)

// templates are the organization's templates.
var templates = resource{tag: tagTemplates, id: func() *openapi3.Parameter { return templateIDParam("id") }, missing: "No such template in the organization.",
	body: "The template.", request: schTemplateRequest, form: schTemplateFormReq, one: schTemplateSaved, page: schTemplateList}

// badSyntax is the 400 of a template that does not compile.
const badSyntax = "Invalid request; a syntax error names html or css with line and column."

// CreateTemplate documents POST /v1/template.
var CreateTemplate = describe("createTemplate", func(s *spec) operation {
	return operation{
		tag: tagTemplates, summary: "Create a template",
		body: templates.requestBody(s),
		responses: map[int]*openapi3.Response{
			201: s.jsonResponse("Created: the template id and its first version.", schTemplateSaved),
			400: s.errorResponse(badSyntax),
			429: s.planLimit("Plan limit exceeded: the plan's template allowance is used (the free plan holds 1)."),
		},
	}
})

// ListTemplates documents GET /v1/template.
var ListTemplates = describe("listTemplates", templates.list(crud{
	summary: "List templates", description: "The latest version of each template, newest first.", ok: "One page of templates.",
}))

// ListTemplateVersions documents GET /v1/template/{id}.
var ListTemplateVersions = describe("listTemplateVersions", templates.get(crud{
	summary: "List a template's versions", description: "Every version of the template, in one page (next_page_start is null).",
	ok: "The versions.", schema: schTemplateList,
}))

// UpdateTemplate documents POST /v1/template/{id}.
var UpdateTemplate = describe("updateTemplate", templates.update(crud{
	summary:     "Update a template",
	description: "Saves a new version; when the latest version has rendered nothing yet, replaces it instead. Edges drop what the template's signed URLs produced.",
	ok:          "Saved: the version.", errors: map[int]string{400: badSyntax},
}))

// DeleteTemplate documents DELETE /v1/template/{id}.
var DeleteTemplate = describe("deleteTemplate", templates.delete(crud{
	summary: "Delete a template", description: "Deletes the template and every version; images already made stay. Edges drop what its signed URLs produced.", ok: "Deleted.",
}))
