package image

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	"github.com/pictorhq/pictor/origin/apierr"
	"github.com/pictorhq/pictor/origin/field"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
)

// Signer is an enabled API key that can sign URLs.
type Signer struct {
	Org    *org.Org
	Secret string
	Grant  perm.Grant
}

// SignerStore finds signers.
type SignerStore interface {
	// Signer returns the enabled key of an active organization whose api_id
	// is apiID, or an error.
	Signer(apiID string) (*Signer, error)
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

var signedFormats = map[string]imageparams.Format{
	"": imageparams.FormatPNG, "png": imageparams.FormatPNG, "jpg": imageparams.FormatJPG, "jpeg": imageparams.FormatJPG,
	"webp": imageparams.FormatWebP, "pdf": imageparams.FormatPDF,
}

// CreateAndRender handles GET /v1/image/create-and-render/{api_id}/{token}[/{format}]:
// the query string holds creation parameters and the token signs it. The
// image id is derived from the organization and the parameters, so a URL
// renders and is charged once, and is served from storage afterwards.
func (h *Handler) CreateAndRender(w http.ResponseWriter, r *http.Request) {
	format, ok := signedFormats[strings.ToLower(r.PathValue("format"))]
	if !ok {
		apierr.Write(w, r, apierr.NotFound("Unknown format %q", r.PathValue("format")))
		return
	}
	signer, err := h.Keys.Signer(r.PathValue("api_id"))
	if err != nil || !validToken(signer.Secret, r.URL.RawQuery, r.PathValue("token")) {
		apierr.Write(w, r, invalidToken())
		return
	}
	if !signer.Grant.Has(perm.ImagesCreate) {
		apierr.Write(w, r, apierr.Forbidden("Missing permission: signed URLs need a key with %s", perm.ImagesCreate))
		return
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		apierr.Write(w, r, apierr.BadRequest("Malformed query string"))
		return
	}
	params, err := h.parse(r.Context(), signer.Org, field.FromForm(query))
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	params.DedupeDurationS = nil // signed URLs are content-addressed already
	id := ContentID(signer.Org.ID, &params, "create-and-render")
	created, charge, err := h.Service.Create(r.Context(), signer.Org, []Item{{Params: params, ID: id}})
	writeCharge(w, charge)
	if err != nil {
		apierr.Write(w, r, planError(err))
		return
	}
	h.serve(w, r, created[0].ID, format)
}
