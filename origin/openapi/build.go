package openapi

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/ratelimit"
)

// Version is the document's info.version (spec §9).
const Version = "1.0.0"

// Options adapt Build.
type Options struct {
	// ServerURL is the document's one server, "" for "/": relative, so the
	// API is where the document was fetched from and the document holds
	// nothing of one deployment.
	ServerURL string
}

// Build describes the routes of the table. Every route must have its Doc
// (an *Operation of this package) or be Hidden, and every Operation must be
// a route's: otherwise Build fails naming each mismatch (ErrUndocumented,
// ErrNotServed, ErrInvalid).
func Build(routes []api.Route, opts Options) (*openapi3.T, error) {
	s := newSpec()
	s.define()
	server := opts.ServerURL
	if server == "" {
		server = "/"
	}
	doc := &openapi3.T{
		OpenAPI: "3.1.0",
		Info: &openapi3.Info{
			Title:       "Pictor API",
			Version:     Version,
			Description: description,
		},
		Servers:    openapi3.Servers{{URL: server, Description: "The address this document was fetched from."}},
		Paths:      openapi3.NewPaths(),
		Components: &s.components,
	}
	for _, t := range tags {
		doc.Tags = append(doc.Tags, &openapi3.Tag{Name: t.name, Description: t.description})
	}

	var errs []error
	seen := map[string]bool{}
	ids := map[string]string{}
	for _, r := range routes {
		key := r.Method + " " + r.Pattern
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s: %w: the table lists it twice", key, ErrInvalid))
			continue
		}
		seen[key] = true
		d, _ := r.Doc.(*Operation)
		switch {
		case r.Hidden != "" && r.Doc != nil:
			errs = append(errs, fmt.Errorf("%s: %w: documented and hidden (%s)", key, ErrInvalid, r.Hidden))
			continue
		case r.Hidden != "":
			continue
		case d == nil:
			errs = append(errs, fmt.Errorf("%s: %w", key, ErrUndocumented))
			continue
		}
		if other, dup := ids[d.id]; dup {
			errs = append(errs, fmt.Errorf("%s: %w: operationId %s is also %s's", key, ErrInvalid, d.id, other))
			continue
		}
		ids[d.id] = key
		op := d.describe(s)
		op.id = d.id
		if err := s.add(doc, r, op); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	for _, d := range described {
		if _, ok := ids[d.id]; !ok {
			errs = append(errs, fmt.Errorf("%s: %w", d.id, ErrNotServed))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return doc, nil
}

const description = `Pictor renders HTML and CSS, or a screenshot of a public web page, into PNG, JPEG, WebP or PDF images, with templates, batches, signed URLs, social-card (Open Graph) images, proxies and storage destinations.

**Authentication.** HTTP Basic with an API key: its api_id as the user name, its api_key secret as the password. Each operation needs a permission, named in its description and in x-pictor-permission. Public operations (images, signed URLs, OG images) need none.

**Errors.** Every failure answers the standard JSON body {error, message, statusCode}; a 400 caused by request fields adds validation_errors, one {path, message} per invalid field.

**Rate limits.** Management operations (API keys, proxies, storage destinations, OG configurations) share per-organization groups across REST and MCP: 100 reads and 20 writes per group per sliding minute (x-pictor-rate-limit-group). Their answers carry RateLimit-Policy and RateLimit; a 429 carries Retry-After (without it, wait 60 seconds). Image creation is not rate limited: it consumes image credits, reported in the x-renders-* headers. Previews (previewImage) consume none and are limited instead: 30 per organization per sliding minute by default (the operator's --previews-per-minute); a 429 carries Retry-After.

**Not described here.** The MCP endpoint (/mcp) and its OAuth 2.1 authorization server, found from /.well-known/oauth-protected-resource/mcp and /.well-known/oauth-authorization-server; the operators' endpoints.`

// wildcard is a path template's parameter: {name} or {name...}.
var wildcard = regexp.MustCompile(`^\{([A-Za-z0-9_]+)(\.\.\.)?\}$`)

// add documents one route.
func (s *spec) add(doc *openapi3.T, r api.Route, op operation) error {
	path := op.path
	if path == "" {
		path = strings.ReplaceAll(r.Pattern, "...}", "}")
	}
	if err := samePath(r.Pattern, path); err != nil {
		return err
	}
	o := openapi3.NewOperation()
	o.OperationID, o.Summary, o.Tags = op.id, op.summary, []string{op.tag}
	o.Parameters = op.params
	if op.body != nil {
		o.RequestBody = &openapi3.RequestBodyRef{Value: op.body}
	}
	if err := pathParams(path, op.params); err != nil {
		return err
	}
	var notes []string
	if r.Public {
		o.Security = &openapi3.SecurityRequirements{}
		notes = append(notes, "Public: no credentials.")
	} else {
		o.Security = &openapi3.SecurityRequirements{{basicAuth: []string{}}}
		o.Extensions = map[string]any{"x-pictor-permission": string(r.Permission)}
		notes = append(notes, fmt.Sprintf("Needs the permission %s.", r.Permission))
	}
	if r.Group != "" {
		o.Extensions["x-pictor-rate-limit-group"] = string(r.Group)
		notes = append(notes, fmt.Sprintf("Rate limit group %s: %d requests per %d seconds per organization.", r.Group, r.Group.Quota(), int(ratelimit.Window.Seconds())))
	}
	o.Description = strings.TrimSpace(op.description + "\n\n" + strings.Join(notes, " "))

	responses, err := s.responses(r, op)
	if err != nil {
		return err
	}
	o.Responses = responses

	item := doc.Paths.Value(path)
	if item == nil {
		item = &openapi3.PathItem{}
		doc.Paths.Set(path, item)
	}
	if item.GetOperation(r.Method) != nil {
		return fmt.Errorf("%w: %s %s is documented twice", ErrInvalid, r.Method, path)
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
	default:
		return fmt.Errorf("%w: method %s", ErrInvalid, r.Method)
	}
	item.SetOperation(r.Method, o)
	if r.Method == http.MethodGet && r.Public {
		item.SetOperation(http.MethodHead, headOf(o))
	}
	return nil
}

// headOf documents HEAD of a public GET route (the router serves HEAD
// with every GET): the same answers without their bodies. Only public
// routes get one: their answers are images that caches and crawlers ask
// about.
func headOf(get *openapi3.Operation) *openapi3.Operation {
	h := *get
	if rest, ok := strings.CutPrefix(get.OperationID, "get"); ok {
		h.OperationID = "head" + rest
	} else {
		h.OperationID = get.OperationID + "Head"
	}
	h.Summary = get.Summary + " (headers only)"
	h.Description = "GET without the body: the same status and headers. " + get.Description
	h.Responses = openapi3.NewResponses()
	h.Responses.Delete("default")
	for status, resp := range get.Responses.Map() {
		c := *resp.Value
		c.Content = nil
		h.Responses.Set(status, &openapi3.ResponseRef{Value: &c})
	}
	return &h
}

// samePath checks that the OpenAPI path has the route pattern's literal
// segments and a parameter wherever the pattern has one.
func samePath(pattern, path string) error {
	ps, qs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(qs) {
		return fmt.Errorf("%w: path %s does not have the segments of %s", ErrInvalid, path, pattern)
	}
	for i := range ps {
		pw, qw := wildcard.MatchString(ps[i]), wildcard.MatchString(qs[i])
		if pw != qw || (!pw && ps[i] != qs[i]) || strings.HasSuffix(qs[i], "...}") {
			return fmt.Errorf("%w: path %s does not have the segments of %s", ErrInvalid, path, pattern)
		}
	}
	return nil
}

// pathParams checks that the parameters in path are exactly the path
// parameters documented.
func pathParams(path string, ps openapi3.Parameters) error {
	var want, got []string
	for _, seg := range strings.Split(path, "/") {
		if m := wildcard.FindStringSubmatch(seg); m != nil {
			want = append(want, m[1])
		}
	}
	for _, p := range ps {
		if p.Value.In == openapi3.ParameterInPath {
			got = append(got, p.Value.Name)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return fmt.Errorf("%w: %s has path parameters %v, documented %v", ErrInvalid, path, want, got)
	}
	return nil
}

// responses are the operation's answers with what the route implies.
func (s *spec) responses(r api.Route, op operation) (*openapi3.Responses, error) {
	byStatus := map[int]*openapi3.Response{}
	for status, resp := range op.responses {
		if status < 100 || status > 599 {
			return nil, fmt.Errorf("%w: status %d", ErrInvalid, status)
		}
		c := *resp // answers are shared between operations: headers are per operation
		c.Headers = openapi3.Headers{}
		for k, v := range resp.Headers {
			c.Headers[k] = v
		}
		byStatus[status] = &c
	}
	implied := func(status int, description string) {
		if byStatus[status] == nil {
			byStatus[status] = s.errorResponse(description)
			byStatus[status].Headers = openapi3.Headers{}
		}
	}
	if !r.Public {
		implied(http.StatusUnauthorized, "Missing, invalid or disabled credentials, or a suspended organization.")
		byStatus[http.StatusUnauthorized].Headers[hdrWWWAuthenticate] = s.headerRef(hdrWWWAuthenticate)
		implied(http.StatusForbidden, "The key lacks the operation's permission"+map[bool]string{true: ", or the organization's plan lacks the feature.", false: "."}[r.Check != nil])
		implied(http.StatusBadRequest, "A malformed query string (bad percent-encoding, a raw ';', more than 1000 parameters): validation_errors names the parameter.")
	}
	if op.body != nil {
		implied(http.StatusBadRequest, "The body is not a JSON object (or not a valid form), or has invalid fields.")
		implied(http.StatusRequestEntityTooLarge, "The body is too large, or a form has more than 1000 fields.")
		implied(http.StatusUnsupportedMediaType, "Unsupported Content-Type.")
	}
	if r.Group != "" {
		implied(http.StatusTooManyRequests, fmt.Sprintf("The rate limit group %s is exhausted: wait for Retry-After (60 seconds without it). Nothing was done.", r.Group))
		byStatus[http.StatusTooManyRequests].Headers[hdrRetryAfter] = s.headerRef(hdrRetryAfter)
		for status, resp := range byStatus {
			if status != http.StatusUnauthorized {
				resp.Headers[hdrRateLimitPolicy] = s.headerRef(hdrRateLimitPolicy)
				resp.Headers[hdrRateLimit] = s.headerRef(hdrRateLimit)
			}
		}
	}
	if op.renders {
		for _, status := range []int{http.StatusOK, http.StatusTooManyRequests} {
			if resp := byStatus[status]; resp != nil {
				resp.Headers[hdrRendersAllowed] = s.headerRef(hdrRendersAllowed)
				resp.Headers[hdrRendersConsumed] = s.headerRef(hdrRendersConsumed)
				resp.Headers[hdrRendersUsed] = s.headerRef(hdrRendersUsed)
			}
		}
	}
	// Every operation can fail at the origin or on the way through the edge.
	if op.body != nil {
		implied(http.StatusRequestTimeout, "The body did not arrive in time (from 15 seconds on, 4 KiB a second); the connection is closed.")
	}
	implied(http.StatusInternalServerError, "An internal error: the message holds no detail; quote the X-Request-Id header.")
	implied(http.StatusBadGateway, "From the edge: the origin is unavailable.")
	implied(http.StatusServiceUnavailable, "The server is shutting down, or at its connection limit: try again (after Retry-After when present).")
	if h := byStatus[http.StatusServiceUnavailable].Headers; h[hdrRetryAfter] == nil {
		h[hdrRetryAfter] = s.headerRef(hdrRetryAfter)
	}
	implied(http.StatusGatewayTimeout, "A deadline passed: the origin did not answer the edge in time, or the request ran out of time.")
	out := openapi3.NewResponses()
	out.Delete("default")
	for status, resp := range byStatus {
		if len(resp.Headers) == 0 {
			resp.Headers = nil
		}
		out.Set(strconv.Itoa(status), &openapi3.ResponseRef{Value: resp})
	}
	return out, nil
}
