package images

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/rendition"
)

// Signer is an enabled API key that can sign URLs.
type Signer struct {
	Org    *org.Org
	APIID  string
	Secret string
	Grant  perm.Grant
}

// SignerStore finds signers.
type SignerStore interface {
	// Signer returns the enabled key of an active organization whose api_id
	// is apiID, or an error.
	Signer(ctx context.Context, apiID string) (*Signer, error)
	// Signers returns every enabled key of an active organization.
	Signers(ctx context.Context, orgID string) ([]*Signer, error)
}

// Sign returns the token of a signed URL: lowercase hex HMAC-SHA256 of the
// exact query string, keyed with the key's secret.
func Sign(secret, rawQuery string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(rawQuery))
	return hex.EncodeToString(m.Sum(nil))
}

// validToken compares in constant time; tokens are hex, any case.
func validToken(secret, rawQuery, token string) bool {
	want := Sign(secret, rawQuery)
	return hmac.Equal([]byte(want), []byte(strings.ToLower(token)))
}

func invalidToken() error { return apierr.Unauthorized("Invalid token") }

// signedFormat reads a signed URL's format segment as an extension is read
// (see ParsePath): none is PNG.
func signedFormat(r *http.Request) (imageparams.Format, bool) {
	f, ok := imaging.ParseFormat(r.PathValue("format"))
	return imageparams.Format(f), ok
}

// CreateAndRender handles GET /v1/image/create-and-render/{api_id}/{token}[/{format}]:
// the query string holds creation parameters and the token signs it. The
// image id is derived from the organization and the parameters, so a URL
// renders and is charged once, and is served from storage afterwards.
func (h *Handler) CreateAndRender(w http.ResponseWriter, r *http.Request) error {
	format, ok := signedFormat(r)
	if !ok {
		return apierr.NotFound("Unknown format %q", r.PathValue("format"))
	}
	signer, err := h.Keys.Signer(r.Context(), r.PathValue("api_id"))
	if err != nil || !validToken(signer.Secret, r.URL.RawQuery, r.PathValue("token")) {
		return invalidToken()
	}
	if !signer.Grant.Has(perm.ImagesCreate) {
		return apierr.Forbidden("Missing permission: signed URLs need a key with %s", perm.ImagesCreate)
	}
	query, err := field.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	parsed, err := h.parseParams(r.Context(), signer.Org, field.FromForm(query))
	if err != nil {
		return err
	}
	parsed.DedupeDurationS = nil // signed URLs are content-addressed already
	id := rendition.ContentID(signer.Org.ID, &parsed.Params, "create-and-render")
	if err := h.checkSignedDelivery(r.Context(), signer.Org, id, &parsed); err != nil {
		return err
	}
	params := parsed.Params
	w.Header().Set(contract.HeaderTag, contract.KeyTag(r.PathValue("api_id"))) // disabling the key purges the edges
	created, charge, err := h.Service.Create(r.Context(), signer.Org, []rendition.Item{{Params: params, ID: id}})
	writeCharge(w, charge)
	if err != nil {
		return PlanError(err)
	}
	return h.serve(w, r, created[0].ID, format)
}

// TemplateURL handles GET /v1/image/{template_id}/{token}[/{format}]: each
// query parameter is a template value (JSON, or a plain string when it is
// not valid JSON), template_version picks a version, and any enabled key of
// the template's organization with images:create may have signed it.
func (h *Handler) TemplateURL(w http.ResponseWriter, r *http.Request) error {
	format, ok := signedFormat(r)
	if !ok {
		return apierr.NotFound("Unknown format %q", r.PathValue("format"))
	}
	id := r.PathValue("template_id")
	if h.Templates == nil {
		return invalidToken()
	}
	orgID, err := h.Templates.Owner(r.Context(), id)
	if err != nil {
		return invalidToken()
	}
	signers, err := h.Keys.Signers(r.Context(), orgID)
	if err != nil {
		return invalidToken()
	}
	var signer *Signer
	for _, s := range signers {
		if s.Grant.Has(perm.ImagesCreate) && validToken(s.Secret, r.URL.RawQuery, r.PathValue("token")) {
			signer = s
			break
		}
	}
	if signer == nil {
		return invalidToken()
	}
	query, err := field.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	values, version, err := templateQuery(query)
	if err != nil {
		return err
	}
	rawValues, _ := json.Marshal(values)
	parsed, ref, err := h.parseAnyParams(r.Context(), signer.Org, field.FromJSON(map[string]json.RawMessage{"template_values": rawValues}), id, version)
	if err != nil {
		return err
	}
	cid := rendition.ContentID(signer.Org.ID, &parsed.Params, fmt.Sprintf("template:%s:%d", ref.id, ref.version))
	if err := h.checkSignedDelivery(r.Context(), signer.Org, cid, &parsed); err != nil {
		return err
	}
	params := parsed.Params
	created, charge, err := h.Service.Create(r.Context(), signer.Org, []rendition.Item{{Params: params, ID: cid}})
	writeCharge(w, charge)
	if err != nil {
		return PlanError(err)
	}
	h.countRenders(r.Context(), created, []*templateRef{ref})
	// Changing the template or disabling the key purges the edges.
	w.Header().Set(contract.HeaderTag, contract.JoinTags(contract.TemplateTag(ref.id), contract.KeyTag(signer.APIID)))
	return h.serve(w, r, created[0].ID, format)
}

// templateQuery reads a signed template URL's query: template_version
// (0 when absent) and the values, each JSON, or a plain string when it is
// not valid JSON (SignedTemplateQuery writes them so).
func templateQuery(query map[string][]string) (map[string]json.RawMessage, int, error) {
	version := 0
	values := map[string]json.RawMessage{}
	for k, vs := range query {
		v := vs[len(vs)-1]
		if k == "template_version" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, 0, apierr.Field("template_version", "must be a positive integer")
			}
			version = n
			continue
		}
		if json.Valid([]byte(v)) {
			values[k] = json.RawMessage(v)
		} else {
			values[k], _ = json.Marshal(v)
		}
	}
	return values, version, nil
}

// checkSignedDelivery checks the delivery options of a signed URL's image
// id when it is new: an image the URL already made keeps serving though its
// proxy or destination was since disabled or deleted, as any image does.
func (h *Handler) checkSignedDelivery(ctx context.Context, o *org.Org, id string, p *parsed) error {
	if p.ProxyID == "" && p.StorageDestinationID == "" {
		return nil
	}
	if img, err := h.Service.Get(ctx, id); err == nil && img.OrgID == o.ID {
		return nil
	} else if err != nil && !errors.Is(err, rendition.ErrNotFound) {
		return err
	}
	if err := h.checkDelivery(ctx, o, "", p); err != nil {
		return err
	}
	if p.storageOnly {
		return errServedOnly
	}
	return nil
}

// errServedOnly refuses a signed URL whose image would go to a storage
// destination with hcti_storage_disabled: a signed URL serves the image,
// which such a destination forbids (create it with POST /v1/image and PUT
// its /v1/store URL instead).
var errServedOnly = apierr.Field("storage_destination_id", "names a destination with hcti_storage_disabled, whose images are not served: signed URLs cannot use it; create the image with POST /v1/image and PUT its /v1/store URL")
