package resource

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/respond"
)

// PathID validates the {id} path segment as a UUID in its 36-character
// form and returns it in lower case; anything else is a 400 naming the
// field id: "is not a valid <what> id".
func PathID(r *http.Request, what string) (string, error) {
	id := r.PathValue("id")
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return "", apierr.Field("id", "is not a valid %s id", what)
	}
	return strings.ToLower(id), nil
}

// NotFound maps a store error that is notFound (errors.Is) to the standard
// 404 with message; any other error is returned as it is.
func NotFound(err, notFound error, message string) error {
	if errors.Is(err, notFound) {
		return apierr.NotFound("%s", message)
	}
	return err
}

// ListPage reads one page of a cursor list: the request's count and
// page_start (a cursor issued for scope), then list after that position.
// A bad query is the 400 of cursor.Codec.ParseList.
func ListPage[T any](r *http.Request, c cursor.Codec, scope string, list func(after string, count int) ([]T, bool, error)) ([]T, bool, error) {
	count, after, err := c.ParseList(r.URL.Query(), scope)
	if err != nil {
		return nil, false, err
	}
	return list(after, count)
}

// ServeList answers a cursor list: one page (ListPage) in the envelope of
// cursor.NewPage, each item shown as view, the next cursor at pos of the
// last item. An error is returned for the router to answer (an
// api.HandlerFunc's error).
func ServeList[T, V any](w http.ResponseWriter, r *http.Request, c cursor.Codec, scope string,
	list func(after string, count int) ([]T, bool, error), view func(T) V, pos func(T) string) error {
	items, more, err := ListPage(r, c, scope, list)
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusOK, cursor.NewPage(c, scope, items, more, view, pos))
	return nil
}
