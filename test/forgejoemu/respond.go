package forgejoemu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// contentTypeJSON is what Forgejo's ctx.JSON sets, without a space.
const contentTypeJSON = "application/json;charset=utf-8"

// notFoundMessage is Forgejo's en-US "error.not_found".
const notFoundMessage = "The target couldn't be found."

// apiError is Forgejo's APIError body.
type apiError struct {
	Message string `json:"message"`
	URL     string `json:"url"`
}

// apiNotFound is Forgejo's APINotFound body: errors is always an array.
type apiNotFound struct {
	Message string   `json:"message"`
	URL     string   `json:"url"`
	Errors  []string `json:"errors"`
}

// swaggerURL is setting.API.SwaggerURL: ROOT_URL + "api/swagger".
func (e *Emulator) swaggerURL() string { return e.origin + "/api/swagger" }

// writeJSON answers like Forgejo's ctx.JSON (json.Encoder, so HTML-escaped
// and newline-terminated) but with an exact Content-Length, so nothing is
// chunked unless a fault asks for it.
func (e *Emulator) writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		e.logf("forgejoemu: encode response: %v", err)
		buf.Reset()
		status = http.StatusInternalServerError
		buf.WriteString(`{"message":"","url":""}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeError is Forgejo's ctx.Error: {"message":…,"url":…}.
func (e *Emulator) writeError(w http.ResponseWriter, status int, message string) {
	e.writeJSON(w, status, apiError{Message: message, URL: e.swaggerURL()})
}

// writeNotFound is Forgejo's ctx.NotFound: a string replaces the default
// message, errors are listed.
func (e *Emulator) writeNotFound(w http.ResponseWriter, message string, errs ...string) {
	if message == "" {
		message = notFoundMessage
	}
	if errs == nil {
		errs = []string{}
	}
	e.writeJSON(w, http.StatusNotFound, apiNotFound{Message: message, URL: e.swaggerURL(), Errors: errs})
}

// apiHeaders sets the headers Forgejo's API middleware puts on every answer.
func apiHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "max-age=0, private, must-revalidate, no-transform")
		h.Set("X-Frame-Options", "SAMEORIGIN")
		next.ServeHTTP(w, r)
	})
}

// appendExposeHeaders is Forgejo's AppendAccessControlExposeHeaders.
func appendExposeHeaders(h http.Header, names string) {
	if v := h.Get("Access-Control-Expose-Headers"); v != "" {
		h.Set("Access-Control-Expose-Headers", v+", "+names)
		return
	}
	h.Set("Access-Control-Expose-Headers", names)
}
