package middleware

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// ErrUnavailable marks a failure of one of the gateway's own dependencies
// (the token store, the budget store): the caller did nothing wrong, so
// it is answered 503 unavailable, never as a refused token or a spent
// budget, and it spends none of the caller's allowances.
var ErrUnavailable = errors.New("unavailable")

// DependencyError is a failure of the dependency Part ("token store",
// "budget store"); it matches ErrUnavailable and unwraps to its cause.
type DependencyError struct {
	Part  string
	Cause error
}

// Unavailable wraps cause as a failure of the dependency part.
func Unavailable(part string, cause error) error {
	return &DependencyError{Part: part, Cause: cause}
}

func (e *DependencyError) Error() string { return fmt.Sprintf("%s unavailable: %v", e.Part, e.Cause) }

// Unwrap returns the cause.
func (e *DependencyError) Unwrap() error { return e.Cause }

// Is makes a DependencyError match ErrUnavailable.
func (e *DependencyError) Is(target error) bool { return target == ErrUnavailable }

// The dependencies an unavailable answer names.
const (
	PartTokenStore  = "token store"
	PartBudgetStore = "budget store"
	// PartStore is the store as the tools read and write it.
	PartStore = "store"
)

// UnavailableError is the refusal of a call whose dependency part failed:
// code unavailable, naming it.
func UnavailableError(part string) *toolerr.Error {
	return toolerr.New(toolerr.Unavailable, "the %s is unavailable; retry later", part).With("dependency", part)
}

// RefuseUnavailable answers 503 unavailable naming the dependency that
// failed, with Retry-After: 1 (a breaker re-tries the dependency within a
// second). The cause is the logger's business, not the caller's.
func RefuseUnavailable(w http.ResponseWriter, r *http.Request, part string) {
	w.Header().Set("Retry-After", "1")
	Refuse(w, r, UnavailableError(part))
}

// logUnavailable logs, once per answer, why a dependency failed, with the
// request id that ties the line to the caller's answer and access line.
// A nil log is slog's default.
func logUnavailable(log *slog.Logger, r *http.Request, err error) {
	if log == nil {
		log = slog.Default()
	}
	part := "dependency"
	var de *DependencyError
	if errors.As(err, &de) {
		part = de.Part
	}
	log.LogAttrs(r.Context(), slog.LevelError, "the "+part+" is unavailable; answered unavailable",
		slog.String("request_id", RecordFromContext(r.Context()).RequestID()), slog.String("error", err.Error()))
}

// refuseUnavailableErr logs err and answers unavailable naming its part.
func refuseUnavailableErr(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	logUnavailable(log, r, err)
	part := PartBudgetStore
	var de *DependencyError
	if errors.As(err, &de) {
		part = de.Part
	}
	RefuseUnavailable(w, r, part)
}
