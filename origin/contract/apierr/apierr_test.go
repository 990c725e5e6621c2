package apierr

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

type down string

func (d down) Error() string     { return string(d) }
func (d down) Unavailable() bool { return true }

type notDown string

func (d notDown) Error() string     { return string(d) }
func (d notDown) Unavailable() bool { return false }

// TestFromUnavailable: an error marked Unavailable anywhere in its chain
// is a 503 with Retry-After, through From and through Internal (which
// handlers use for errors they do not expect); an unmarked one, or one
// that says it is not, stays a 500.
func TestFromUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"marked", down("store down"), http.StatusServiceUnavailable},
		{"wrapped", fmt.Errorf("read image x: %w", down("store down")), http.StatusServiceUnavailable},
		{"joined", errors.Join(errors.New("a"), fmt.Errorf("b: %w", down("store down"))), http.StatusServiceUnavailable},
		{"says it is not", notDown("fine"), http.StatusInternalServerError},
		{"plain", errors.New("disk on fire"), http.StatusInternalServerError},
	} {
		for name, convert := range map[string]func(error) *Error{"From": From, "Internal": Internal} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				e := convert(tc.err)
				if e.Status != tc.want {
					t.Fatalf("status %d, want %d", e.Status, tc.want)
				}
				if tc.want == http.StatusServiceUnavailable && (e.Header.Get("Retry-After") == "" || e.Message == "") {
					t.Fatalf("503 without Retry-After or message: %+v", e)
				}
				if e.Cause != tc.err {
					t.Fatalf("cause %v, want the error itself (logged, never sent)", e.Cause)
				}
			})
		}
	}
}
