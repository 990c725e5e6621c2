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
		params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
		body:        s.anyBody("Template values and options.", schTemplateRender, schTemplateForm),
		responses: map[int]*openapi3.Response{
			200: s.created(),
			400: s.errorResponse("Invalid request; a template fault (runaway loop, memory, depth, output size, missing helper) names template_values."),
			403: s.creation()[403], 404: s.notFound("No such template or version in the organization, or a proxy or storage destination named that is not the organization's."), 429: s.creation()[429],
		},
		renders: true,
	}
})

// RenderTemplateVersion documents POST /v1/image/{template_id}/{template_version}.
var RenderTemplateVersion = describe("renderTemplateVersion", func(s *spec) operation {
	return operation{
		path: "/v1/image/{template_id}/{version_or_token}",
		tag:  tagTemplates, summary: "Create an image from a template version",
		description: "renderTemplate with the version in the path.",
		params: params(pathParam("template_id", "The template id (t-...).", withPattern(templateIDPattern, str(""))),
			pathParam("version_or_token", "The template version, a positive integer (anything else is a 400 naming template_version).", withPattern("^[1-9][0-9]*$", str("")))),
		body: s.anyBody("Template values and options (template_version in the body is ignored).", schTemplateRender, schTemplateForm),
		responses: map[int]*openapi3.Response{
			200: s.created(),
			400: s.errorResponse("Invalid request; a template fault names template_values."),
			403: s.creation()[403], 404: s.notFound("No such template or version in the organization, or a proxy or storage destination named that is not the organization's."), 429: s.creation()[429],
		},
		renders: true,
	}
})

// RenderSignedTemplate documents GET /v1/image/{template_id}/{token}.
var RenderSignedTemplate = describe("renderSignedTemplate", func(s *spec) operation {
	return operation{
		path: "/v1/image/{template_id}/{version_or_token}",
		tag:  tagSigned, summary: "Render a template from a signed URL",
		description: "Each query parameter is a template value; template_version picks a version (the latest when absent). Any enabled key of the template's organization holding images:create may have signed it. " +
			"Changing or deleting the template, or disabling the key, purges what the URL produced.",
		params: append(params(pathParam("template_id", "The template id (t-...).", withPattern(templateIDPattern, str(""))),
			pathParam("version_or_token", tokenParam().Description, withPattern("^[0-9A-Fa-f]{64}$", str("")))), templateQuery()),
		responses: s.signed(), renders: true,
	}
})

// RenderSignedTemplateAs documents GET /v1/image/{template_id}/{token}/{format}.
var RenderSignedTemplateAs = describe("renderSignedTemplateAs", func(s *spec) operation {
	return operation{
		tag: tagSigned, summary: "Render a template from a signed URL, in a format",
		description: "renderSignedTemplate with the format in the path.",
		params: append(params(pathParam("template_id", "The template id (t-...).", withPattern(templateIDPattern, str(""))),
			tokenParam(), formatParam()), templateQuery()),
		responses: s.signed(), renders: true,
	}
})

// CreateTemplate documents POST /v1/template.
var CreateTemplate = describe("createTemplate", func(s *spec) operation {
	return operation{
		tag: tagTemplates, summary: "Create a template",
		body: s.anyBody("The template.", schTemplateRequest, schTemplateFormReq),
		responses: map[int]*openapi3.Response{
			201: s.jsonResponse("Created: the template id and its first version.", schTemplateSaved),
			400: s.errorResponse("Invalid request; a syntax error names html or css with line and column."),
			429: s.planLimit("Plan limit exceeded: the plan's template allowance is used (the free plan holds 1)."),
		},
	}
})

// ListTemplates documents GET /v1/template.
var ListTemplates = describe("listTemplates", func(s *spec) operation {
	return operation{
		tag: tagTemplates, summary: "List templates",
		description: "The latest version of each template, newest first.",
		params:      s.refs(parCount, parPageStart),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("One page of templates.", schTemplateList),
			400: s.invalid(),
		},
	}
})

// ListTemplateVersions documents GET /v1/template/{id}.
var ListTemplateVersions = describe("listTemplateVersions", func(s *spec) operation {
	return operation{
		tag: tagTemplates, summary: "List a template's versions",
		description: "Every version of the template, in one page (next_page_start is null).",
		params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The versions.", schTemplateList),
			404: s.notFound("No such template in the organization."),
		},
	}
})

// UpdateTemplate documents POST /v1/template/{id}.
var UpdateTemplate = describe("updateTemplate", func(s *spec) operation {
	return operation{
		tag: tagTemplates, summary: "Update a template",
		description: "Saves a new version; when the latest version has rendered nothing yet, replaces it instead. Edges drop what the template's signed URLs produced.",
		params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
		body:        s.anyBody("The template.", schTemplateRequest, schTemplateFormReq),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Saved: the version.", schTemplateSaved),
			400: s.errorResponse("Invalid request; a syntax error names html or css with line and column."),
			404: s.notFound("No such template in the organization."),
		},
	}
})

// DeleteTemplate documents DELETE /v1/template/{id}.
var DeleteTemplate = describe("deleteTemplate", func(s *spec) operation {
	return operation{
		tag: tagTemplates, summary: "Delete a template",
		description: "Deletes the template and every version; images already made stay. Edges drop what its signed URLs produced.",
		params:      params(pathParam("id", "The template id (t-...).", withPattern(templateIDPattern, str("")))),
		responses: map[int]*openapi3.Response{
			204: emptyResponse("Deleted."),
			404: s.notFound("No such template in the organization."),
		},
	}
})
