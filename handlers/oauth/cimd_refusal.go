package oauth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// metadataRefusedText is all a caller is told when a client metadata
// document cannot be used, whatever the reason. The reason — a connection
// refused, a timeout, a status, a body, the address a name resolved to —
// would tell a caller what the gateway can reach and how, which makes the
// fetch a scanner of the gateway's network; so it goes to the log only.
const metadataRefusedText = "The client metadata document could not be used; the gateway's log says why."

// metadataRefusal is a client_id URL, or its document, that cannot be
// used. Its Error is metadataRefusedText, so whoever shows or wraps it
// shows no more; its reason is for the log and for tests (errors.Is).
type metadataRefusal struct{ reason error }

func (e *metadataRefusal) Error() string { return metadataRefusedText }
func (e *metadataRefusal) Unwrap() error { return e.reason }

// logAttrs are the fields of a refusal's log line: the client_id without
// its query (which is the client's, and might carry anything), cut to the
// log's field bound, and the reason.
func (f *metadataFetcher) logAttrs(clientID string, reason error) []any {
	id, _, hasQuery := strings.Cut(clientID, "?")
	if hasQuery {
		id += "?…"
	}
	var out []any
	for _, a := range middleware.CappedString("client_id", id, middleware.MaxLoggedField) {
		out = append(out, a)
	}
	return append(out, slog.String("reason", reason.Error()))
}

// checkMetadataClient refuses, for the authorization endpoint, a client_id
// URL whose document cannot be used, on the page with its own words rather
// than "does not exist"; nil when the document is usable.
func (s *Server) checkMetadataClient(ctx context.Context, clientID string) error {
	if s.cimd == nil {
		return refuse(codeInvalidClient, invalidClientText+" This gateway does not accept client metadata documents (oauth.client_metadata_hosts is empty).")
	}
	if _, err := s.cimd.get(ctx, clientID); errors.Is(err, errMetadataRate) {
		return &oauthError{code: codeTemporarilyUnavailable, description: metadataRateText, status: http.StatusTooManyRequests, retryAfter: metadataRetryAfter}
	} else if part := unavailablePart(err); part != "" {
		return &oauthError{code: codeTemporarilyUnavailable, description: "The gateway's " + part + " is unavailable; try again in a moment.", status: http.StatusServiceUnavailable, retryAfter: "1"}
	} else if err != nil {
		return refuse(codeInvalidClient, invalidClientText+" "+metadataRefusedText)
	}
	return nil
}

// metadataRateText is what a caller past a fetch rate is told.
const metadataRateText = "Too many client metadata documents were fetched; try again in a minute."

// writeMetadataRefusal answers a token or revocation request that failed
// because its client metadata document cannot be used — with the one
// generic invalid_client, or past a fetch rate 429 with Retry-After (the
// gateway's answer to every bound, docs/architecture.md#load-bounds) — and
// reports whether it did.
func writeMetadataRefusal(w http.ResponseWriter, err error) bool {
	var mr *metadataRefusal
	switch {
	case !errors.As(err, &mr):
		return false
	case errors.Is(mr, errMetadataRate):
		w.Header().Set("Retry-After", metadataRetryAfter)
		writeError(w, http.StatusTooManyRequests, "temporarily_unavailable", metadataRateText)
	case unavailablePart(mr) != "":
		// The cause was logged where the counter failed.
		w.Header().Set("Retry-After", "1")
		writeUnavailable(w, nil, unavailablePart(mr))
	default:
		writeError(w, http.StatusUnauthorized, "invalid_client", metadataRefusedText)
	}
	return true
}

// unavailablePart names the dependency whose failure err is (a rate's
// counter: the budget store), or "".
func unavailablePart(err error) string {
	var de *middleware.DependencyError
	if errors.As(err, &de) {
		return de.Part
	}
	return ""
}
