package forgejoemu

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// handlePullList is GET /repos/{owner}/{repo}/pulls. As in Forgejo's code
// (whatever its swagger says), state "open" or "closed" filters and anything
// else, including no state, lists all. Sort is Forgejo's: newest first by
// default, or oldest, recentupdate, leastupdate. poster filters by login.
func (e *Emulator) handlePullList(w http.ResponseWriter, r *http.Request) {
	rc := repoFrom(r.Context())
	c := callerFrom(r.Context())
	q := r.URL.Query()
	opts := parseListOptions(r)
	state := strings.TrimSpace(q.Get("state"))
	sortType := strings.TrimSpace(q.Get("sort"))

	e.mu.Lock()
	var posterID int64
	if name := q.Get("poster"); name != "" {
		u := e.userLocked(name)
		if u == nil {
			e.mu.Unlock()
			e.writeError(w, http.StatusBadRequest, fmt.Sprintf("user does not exist [uid: 0, name: %s]", name))
			return
		}
		posterID = u.ID
	}
	var hits []*Pull
	for _, p := range rc.repo.pulls {
		if (state == "open" && p.closed) || (state == "closed" && !p.closed) {
			continue
		}
		if posterID != 0 && p.poster.ID != posterID {
			continue
		}
		hits = append(hits, p)
	}
	sort.Slice(hits, pullOrder(hits, sortType))
	start, end := opts.bounds(len(hits))
	page := hits[start:end]
	e.mu.Unlock()

	body, err := e.toAPIPulls(r.Context(), rc.repo, c.user, page)
	if err != nil {
		e.logf("forgejoemu: list pulls: %v", err)
		e.writeError(w, http.StatusInternalServerError, "")
		return
	}
	e.setPaginationHeaders(w, r, len(hits), opts)
	e.writeJSON(w, http.StatusOK, body)
}

// pullOrder is Forgejo's applySorts for the sorts that make sense here.
// Callers hold e.mu (it reads created/updated).
func pullOrder(ps []*Pull, sortType string) func(i, j int) bool {
	newest := func(a, b *Pull) bool {
		if !a.created.Equal(b.created) {
			return a.created.After(b.created)
		}
		return a.id > b.id
	}
	switch sortType {
	case "oldest":
		return func(i, j int) bool { return newest(ps[j], ps[i]) }
	case "recentupdate":
		return func(i, j int) bool {
			if !ps[i].updated.Equal(ps[j].updated) {
				return ps[i].updated.After(ps[j].updated)
			}
			return newest(ps[i], ps[j])
		}
	case "leastupdate":
		return func(i, j int) bool {
			if !ps[i].updated.Equal(ps[j].updated) {
				return ps[i].updated.Before(ps[j].updated)
			}
			return newest(ps[j], ps[i])
		}
	default:
		return func(i, j int) bool { return newest(ps[i], ps[j]) }
	}
}

// handlePullGet is GET /repos/{owner}/{repo}/pulls/{index}. An index that is
// not an integer reads as 0, as ctx.ParamsInt64 does, and so is not found.
func (e *Emulator) handlePullGet(w http.ResponseWriter, r *http.Request) {
	rc := repoFrom(r.Context())
	c := callerFrom(r.Context())
	index, _ := strconv.ParseInt(pathParam(r, "index"), 10, 64)
	e.mu.Lock()
	p := rc.repo.pulls[index]
	e.mu.Unlock()
	if p == nil {
		e.writeNotFound(w, "")
		return
	}
	body, err := e.toAPIPulls(r.Context(), rc.repo, c.user, []*Pull{p})
	if err != nil {
		e.logf("forgejoemu: get pull: %v", err)
		e.writeError(w, http.StatusInternalServerError, "")
		return
	}
	e.writeJSON(w, http.StatusOK, body[0])
}
