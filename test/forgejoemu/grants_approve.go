package forgejoemu

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
)

// handleGrantApprove is POST …/agent-work-grants/{grant}/approve: the
// emulator's stand-in for Core's browser approval, so the demo can show
// the human side of the flow with one curl. Core has no such API route
// (approval is a signed-in browser action, never reachable through MCP);
// here the caller's token plays the browser session. The caller needs
// write:repository and write access to the repository, and cannot be the
// grant's agent; only awaiting_human becomes active (ApproveGrant).
func (e *Emulator) handleGrantApprove(w http.ResponseWriter, r *http.Request) {
	rc, c := repoFrom(r.Context()), callerFrom(r.Context())
	id, err := strconv.ParseInt(chi.URLParam(r, "grant"), 10, 64)
	e.mu.Lock()
	g := e.grantsLocked().grants[id]
	e.mu.Unlock()
	if err != nil || g == nil || g.repo != rc.repo {
		e.writeGrantError(w, http.StatusNotFound, "agent work grant does not exist")
		return
	}
	switch err := e.ApproveGrant(id, c.user.Login); {
	case errors.Is(err, ErrNotFound):
		e.writeGrantError(w, http.StatusNotFound, "agent work grant does not exist")
		return
	case err != nil:
		e.writeGrantError(w, http.StatusConflict, err.Error())
		return
	}
	e.mu.Lock()
	body := e.toAPIGrantLocked(g)
	e.mu.Unlock()
	e.writeJSON(w, http.StatusOK, body)
}
