package respond

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// JSON writes v as a JSON body with the status.
func JSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		apierr.Write(w, r, apierr.Internal(err))
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// Empty writes a bodyless status such as 202 or 204.
func Empty(w http.ResponseWriter, status int) {
	w.WriteHeader(status)
}
