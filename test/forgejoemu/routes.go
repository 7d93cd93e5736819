package forgejoemu

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
)

// handler assembles the whole server:
//
//  1. emurecord.Serve, the record's own route, so asking it records nothing;
//     then emurecord.Timed, which times the rest for Options.Served;
//  2. recordRequests, so every other request is seen, faulted or not;
//  3. recoverPanics, so a bug in a route is a 500, not a dropped connection;
//  4. applyFaults next, so a fault can replace or reshape any answer;
//  5. apiHeaders, the headers Forgejo's API middleware adds to everything;
//  6. the router, whose /api/v1 tree authenticates like Forgejo's apiAuth
//     (a bad credential is 401 on every API path, known or not).
func (e *Emulator) handler() http.Handler {
	return emurecord.Serve(emurecord.Timed(e.recordRequests(e.recoverPanics(e.applyFaults(apiHeaders(e.router())))), e.opts.Served), e.RecordStats)
}

// recoverPanics turns a panic in a route into Forgejo's 500 body (when
// nothing was sent yet) and a log line. http.ErrAbortHandler passes through.
func (e *Emulator) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			e.logf("forgejoemu: panic in %s %s: %v", r.Method, r.URL.Path, v)
			e.writeError(w, http.StatusInternalServerError, "")
		}()
		next.ServeHTTP(w, r)
	})
}

// router is the one route table. Route groups mirror Forgejo's: everything
// under /repos needs the repository scope; /{owner}/{repo} resolves the
// repository and the caller's access first. Add new routes here.
func (e *Emulator) router() *chi.Mux {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { e.writeNotFound(w, "") })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		e.writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	})
	r.Route("/api/v1", func(r chi.Router) {
		r.Use(e.authenticate)
		r.NotFound(func(w http.ResponseWriter, r *http.Request) { e.writeNotFound(w, "") })
		e.grantRoutes(r) // agent work grants and their Issues (grants_routes.go)
		r.Route("/repos", func(r chi.Router) {
			r.Use(e.requireScope(categoryRepository))
			r.Get("/search", e.handleRepoSearch)
			r.Route("/{owner}/{repo}", func(r chi.Router) {
				r.Use(e.repoAssignment)
				r.Get("/", e.handleRepoGet)
				r.Get("/pulls", e.handlePullList)
				r.Get("/pulls/{index}", e.handlePullGet)
				r.Get("/pulls/{index}.diff", e.handlePullDiff)
			})
		})
	})
	return r
}

// Pattern is the route pattern the emulator serves method and path with,
// or "" when it has none: a test checks that it serves every route the
// gateway's Forgejo client requests.
func (e *Emulator) Pattern(method, path string) string {
	return e.router().Find(chi.NewRouteContext(), method, path)
}

// repoContext is what repoAssignment resolved for the rest of the route.
type repoContext struct {
	repo *Repo
	mode accessMode
}

type repoKeyType struct{}

// repoFrom returns the repository resolved by repoAssignment.
func repoFrom(ctx context.Context) repoContext {
	rc, _ := ctx.Value(repoKeyType{}).(repoContext)
	return rc
}

// pathParam returns a route parameter, unescaped (chi matches the escaped path).
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// repoAssignment is Forgejo's repoAssignment then checkTokenPublicOnly: an
// unknown owner or repository, or one the caller may not see, is 404 (never
// 403, so a private repository's existence does not leak); a public-only
// token on a private repository it can see is 403.
func (e *Emulator) repoAssignment(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, name := pathParam(r, "owner"), pathParam(r, "repo")
		c := callerFrom(r.Context())
		e.mu.Lock()
		u := e.userLocked(owner)
		var repo *Repo
		var mode accessMode
		if u != nil {
			if repo = e.repoLocked(owner, name); repo != nil {
				mode = repo.accessLocked(c.user)
			}
		}
		e.mu.Unlock()
		switch {
		case u == nil:
			e.writeNotFound(w, "GetUserByName", fmt.Sprintf("user redirect does not exist [name: %s]", owner))
			return
		case repo == nil || mode == accessNone:
			e.writeNotFound(w, "")
			return
		case c.publicOnly && repo.private:
			e.writeError(w, http.StatusForbidden, "token scope is limited to public repos")
			return
		}
		ctx := context.WithValue(r.Context(), repoKeyType{}, repoContext{repo: repo, mode: mode})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// handleRepoGet is GET /repos/{owner}/{repo}.
func (e *Emulator) handleRepoGet(w http.ResponseWriter, r *http.Request) {
	rc := repoFrom(r.Context())
	e.mu.Lock()
	body := e.toAPIRepoLocked(rc.repo, rc.mode)
	e.mu.Unlock()
	e.writeJSON(w, http.StatusOK, body)
}

// Repo returns a repository by owner and name (ignoring case).
func (e *Emulator) Repo(owner, name string) (*Repo, error) {
	return e.lookupRepo(owner, name)
}
