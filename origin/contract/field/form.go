package field

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// MaxFormFields bounds the fields of a form body and the parameters of a
// query string: far more than any request of the API holds (a creation has
// about forty parameters, headers repeated at most twenty times). A form
// past it is refused with 413 naming the limit, a query with 400.
const MaxFormFields = 1000

// MaxPartHeaders is what mime/multipart allows in one part's header before
// it reports ErrMessageTooLarge (its default; GODEBUG=multipartmaxheaders
// changes it, and Pictor does not set it).
const MaxPartHeaders = 10000

// Query returns the request's query parameters. Use it instead of
// r.URL.Query(), which drops a malformed pair silently: a pair that is not
// valid percent-encoding here is a 400 whose validation_errors name the
// parameter (or "query" when even its name cannot be read).
func Query(r *http.Request) (url.Values, error) {
	v, err := parseURLEncoded(r.URL.RawQuery, MaxFormFields)
	if errors.Is(err, errTooManyFields) {
		return nil, apierr.Field("query", "has more than %d parameters", MaxFormFields)
	}
	return v, err
}

// ParseQuery is Query for a raw query string that was already read, such as
// the signed part of a signed URL.
func ParseQuery(raw string) (url.Values, error) {
	return Query(&http.Request{URL: &url.URL{RawQuery: raw}})
}

// errTooManyFields is returned by parseURLEncoded past its limit.
var errTooManyFields = errors.New("too many fields")

// parseURLEncoded decodes application/x-www-form-urlencoded text as
// url.ParseQuery does (pairs split on '&', '+' is a space, empty pairs
// skipped), but refuses what ParseQuery would silently drop: a pair that is
// not valid percent-encoding, or that holds a raw ';' (once a separator,
// now ambiguous). The error is a 400 naming the field; more than max
// non-empty pairs is errTooManyFields, found before anything is decoded.
func parseURLEncoded(s string, max int) (url.Values, error) {
	pairs := 0
	for rest := s; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair != "" {
			pairs++
		}
	}
	if pairs > max {
		return nil, errTooManyFields
	}
	v := make(url.Values, min(pairs, 64))
	var errs Errors
	for s != "" {
		var pair string
		pair, s, _ = strings.Cut(s, "&")
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		switch {
		case err != nil:
			errs.Add("query", "holds a parameter name that is not valid percent-encoding: %s", excerpt(rawKey))
			continue
		case strings.Contains(rawKey, ";"):
			errs.Add("query", "holds a parameter name with a raw ';' (encode it as %%3B): %s", excerpt(rawKey))
			continue
		}
		if strings.Contains(rawValue, ";") {
			errs.Add(key, "holds a raw ';': encode it as %%3B")
			continue
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			errs.Add(key, "is not valid percent-encoding (a '%%' must be followed by two hex digits; encode a literal '%%' as %%25)")
			continue
		}
		v[key] = append(v[key], value)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

// excerpt quotes at most 40 bytes of s for an error message.
func excerpt(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q...", s[:40])
	}
	return fmt.Sprintf("%q", s)
}

// decodeURLEncoded reads a form body of at most maxBytes.
func decodeURLEncoded(w http.ResponseWriter, r *http.Request, maxBytes int64) (*Object, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		return nil, bodyError(err, maxBytes, "form body")
	}
	v, err := parseURLEncoded(string(body), MaxFormFields)
	if errors.Is(err, errTooManyFields) {
		return nil, tooManyFields()
	}
	if err != nil {
		return nil, err
	}
	return FromForm(v), nil
}

func tooManyFields() error {
	return apierr.New(http.StatusRequestEntityTooLarge, "Request body has more than %d form fields", MaxFormFields)
}

// decodeMultipart reads a multipart/form-data body of at most maxBytes,
// part by part: at most MaxFormFields parts, values in memory (the body is
// capped already). File parts count but are not fields, as with
// http.Request.ParseMultipartForm.
func decodeMultipart(w http.ResponseWriter, r *http.Request, maxBytes int64, boundary string) (*Object, error) {
	if boundary == "" {
		return nil, apierr.BadRequest("Malformed multipart body: the Content-Type has no boundary")
	}
	mr := multipart.NewReader(http.MaxBytesReader(w, r.Body, maxBytes), boundary)
	v := url.Values{}
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			return FromForm(v), nil
		}
		if err != nil {
			return nil, bodyError(err, maxBytes, "multipart body")
		}
		if parts == MaxFormFields {
			return nil, tooManyFields()
		}
		name := p.FormName()
		if name == "" || p.FileName() != "" {
			continue // NextPart skips what is left of it
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, bodyError(err, maxBytes, "multipart body")
		}
		v[name] = append(v[name], string(b))
	}
}
