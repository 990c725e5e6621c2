package resource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/respond"
)

// TimeFormat is how answers write timestamps: UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Stamps are a record's created_at and updated_at in an answer; a view
// embeds them last.
type Stamps struct {
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// NewStamps writes a record's creation and last update times (UTC,
// TimeFormat).
func NewStamps(created, updated time.Time) Stamps {
	return Stamps{CreatedAt: created.UTC().Format(TimeFormat), UpdatedAt: updated.UTC().Format(TimeFormat)}
}

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

// Routes is what the kit's handlers know of a resource's routes: who may
// call them, how a record is answered and how the resource's errors are.
// A handler gives the work of its route as a function of the caller (and
// the record's id); the kit admits the request, runs it and answers.
type Routes[T, V any] struct {
	// Name names one record: "is not a valid <Name> id".
	Name string
	// Check, when set, refuses the caller's organization before anything
	// is read (a plan without the resource): its error is the answer.
	Check func(*org.Org) error
	// Errors maps the resource's own errors (not found, conflicts) to
	// answers and returns any other as it is (see NotFound); it is applied
	// to every error of a route's work. Nil leaves them all as they are.
	Errors func(error) error
	// View is a record's answer (Answer, Collection, One, List).
	View func(*T) V
	// Scope is the cursor scope of a list, before the organization's id
	// ("proxies/"); ID is a record's position in it (List).
	Scope string
	ID    func(*T) string
}

// Caller returns the request's principal once Check allows its
// organization. A route served without authentication is a 500.
func (rt Routes[T, V]) Caller(r *http.Request) (*auth.Principal, error) {
	p := auth.FromContext(r.Context())
	if p == nil {
		return nil, apierr.Internal(fmt.Errorf("%s route served without authentication", rt.Name))
	}
	if rt.Check != nil {
		if err := rt.Check(p.Org); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Target returns the caller (Caller) and the record its request names
// (the {id} path segment, PathID).
func (rt Routes[T, V]) Target(r *http.Request) (*auth.Principal, string, error) {
	p, err := rt.Caller(r)
	if err != nil {
		return nil, "", err
	}
	id, err := PathID(r, rt.Name)
	if err != nil {
		return nil, "", err
	}
	return p, id, nil
}

// Fail is err as the answer: mapped by Errors.
func (rt Routes[T, V]) Fail(err error) error {
	if rt.Errors == nil {
		return err
	}
	return rt.Errors(err)
}

// Answer answers one record: 200 with its View, or err (Fail) when it is
// not nil.
func (rt Routes[T, V]) Answer(w http.ResponseWriter, r *http.Request, t *T, err error) error {
	if err != nil {
		return rt.Fail(err)
	}
	respond.JSON(w, r, http.StatusOK, rt.View(t))
	return nil
}

// Collection answers a request on the resource's collection (a creation):
// the record do returns for the caller (Answer).
func (rt Routes[T, V]) Collection(w http.ResponseWriter, r *http.Request, do func(p *auth.Principal) (*T, error)) error {
	p, err := rt.Caller(r)
	if err != nil {
		return err
	}
	t, err := do(p)
	return rt.Answer(w, r, t, err)
}

// One answers a request on one record (a read or an update): the record
// do returns for the caller and the id (Target), answered as Answer does.
func (rt Routes[T, V]) One(w http.ResponseWriter, r *http.Request, do func(p *auth.Principal, id string) (*T, error)) error {
	p, id, err := rt.Target(r)
	if err != nil {
		return err
	}
	t, err := do(p, id)
	return rt.Answer(w, r, t, err)
}

// Remove answers a deletion: 204 once del removed the caller's record
// with the id (Target), else del's error (Fail).
func (rt Routes[T, V]) Remove(w http.ResponseWriter, r *http.Request, del func(p *auth.Principal, id string) error) error {
	p, id, err := rt.Target(r)
	if err != nil {
		return err
	}
	if err := del(p, id); err != nil {
		return rt.Fail(err)
	}
	respond.Empty(w, http.StatusNoContent)
	return nil
}

// List answers the caller's cursor list (ServeList in the scope Scope and
// the organization's id): list's records after a position, each shown
// as View.
func (rt Routes[T, V]) List(w http.ResponseWriter, r *http.Request, c cursor.Codec, list func(ctx context.Context, orgID, after string, count int) ([]*T, bool, error)) error {
	p, err := rt.Caller(r)
	if err != nil {
		return err
	}
	return ServeList(w, r, c, rt.Scope+p.Org.ID, func(after string, count int) ([]*T, bool, error) {
		return list(r.Context(), p.Org.ID, after, count)
	}, rt.View, rt.ID)
}

// Notify runs hook on t when it is set: a resource's optional callback
// after a change (the edges drop what they hold).
func Notify[T any](ctx context.Context, hook func(context.Context, T) error, t T) error {
	if hook == nil {
		return nil
	}
	return hook(ctx, t)
}
