package forgejoemu

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// searchResults is Forgejo's structs.SearchResults.
type searchResults struct {
	OK   bool             `json:"ok"`
	Data []*apiRepository `json:"data"`
}

// formBool is ctx.FormBool: strconv.ParseBool, false on error.
func formBool(v string) bool {
	b, _ := strconv.ParseBool(v)
	return b
}

// handleRepoSearch is GET /repos/search with Forgejo's semantics for q
// (comma-separated substrings of the lower-case name, or "owner/name"),
// includeDesc, private, is_private, mode, exclusive, uid, sort and order.
// Without uid, mode=collaborative only excludes mirrors (none here), as in Forgejo.
// Anonymous callers and public-only tokens see public repositories only;
// a signed-in caller also sees private ones they own or collaborate on.
func (e *Emulator) handleRepoSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c := callerFrom(r.Context())
	opts := parseListOptions(r)
	keyword := strings.TrimSpace(q.Get("q"))
	includeDesc := formBool(q.Get("includeDesc"))
	private := c.user != nil && (q.Get("private") == "" || formBool(q.Get("private")))
	if c.publicOnly {
		private = false
	}
	mode := q.Get("mode")
	switch mode {
	case "", "source", "fork", "mirror", "collaborative":
	default:
		e.writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("Invalid search mode: \"%s\"", mode))
		return
	}
	less, msg := searchOrder(q.Get("sort"), q.Get("order"))
	if msg != "" {
		e.writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	uid, _ := strconv.ParseInt(q.Get("uid"), 10, 64)

	e.mu.Lock()
	var hits []*Repo
	for _, repo := range e.st.repos {
		if !private && repo.private {
			continue
		}
		if private && repo.accessLocked(c.user) == accessNone {
			continue
		}
		if v := q.Get("is_private"); v != "" && repo.private != formBool(v) {
			continue
		}
		if mode == "fork" || mode == "mirror" {
			continue // the emulator has neither forks nor mirrors
		}
		if uid > 0 && !ownerFilter(repo, e.st.usersByID[uid], mode == "collaborative", formBool(q.Get("exclusive"))) {
			continue
		}
		if keyword != "" && !keywordMatch(repo, keyword, includeDesc) {
			continue
		}
		hits = append(hits, repo)
	}
	sort.SliceStable(hits, func(i, j int) bool {
		// With "owner/name" keywords Forgejo puts exact owner matches first.
		if owner, _, ok := strings.Cut(keyword, "/"); ok && strings.Count(keyword, "/") == 1 {
			oi, oj := strings.EqualFold(hits[i].owner.Login, owner), strings.EqualFold(hits[j].owner.Login, owner)
			if oi != oj {
				return oi
			}
		}
		return less(hits[i], hits[j])
	})
	start, end := opts.bounds(len(hits))
	data := make([]*apiRepository, 0, end-start)
	for _, repo := range hits[start:end] {
		data = append(data, e.toAPIRepoLocked(repo, repo.accessLocked(c.user)))
	}
	e.mu.Unlock()

	e.setPaginationHeaders(w, r, len(hits), opts)
	e.writeJSON(w, http.StatusOK, searchResults{OK: true, Data: data})
}

// ownerFilter is Forgejo's uid condition: repositories the user owns or
// collaborates on; only owned ones with exclusive, only collaborations (not
// owned) with mode=collaborative. Callers hold e.mu.
func ownerFilter(r *Repo, u *User, collaborative, exclusive bool) bool {
	if u == nil {
		return false
	}
	owned := r.owner == u
	collab := !owned && r.isCollaboratorLocked(u)
	switch {
	case collaborative:
		return collab
	case exclusive:
		return owned
	default:
		return owned || collab
	}
}

// keywordMatch is Forgejo's keyword condition without topics: any
// comma-separated part is a substring of the lower-case name (or of the
// description with includeDesc), or "owner/name" matches both by substring.
func keywordMatch(r *Repo, keyword string, includeDesc bool) bool {
	lowerName := strings.ToLower(r.name)
	if strings.Count(keyword, "/") == 1 {
		owner, name, _ := strings.Cut(keyword, "/")
		if strings.Contains(strings.ToLower(r.owner.Login), strings.ToLower(owner)) &&
			strings.Contains(lowerName, strings.ToLower(name)) {
			return true
		}
	}
	for _, part := range strings.Split(keyword, ",") {
		part = strings.ToLower(part)
		if strings.Contains(lowerName, part) {
			return true
		}
		if includeDesc && strings.Contains(strings.ToLower(r.description), part) {
			return true
		}
	}
	return false
}

// searchOrder is Forgejo's OrderByMap for the sort modes the emulator can
// honour; default (no sort) is alphabetical. Ties break on ID.
func searchOrder(sortMode, order string) (func(a, b *Repo) bool, string) {
	byName := func(a, b *Repo) bool {
		if a.name != b.name {
			return a.name < b.name
		}
		return a.id < b.id
	}
	if sortMode == "" {
		return byName, ""
	}
	if order == "" {
		order = "asc"
	}
	if order != "asc" && order != "desc" {
		return nil, fmt.Sprintf("Invalid sort order: \"%s\"", order)
	}
	var asc func(a, b *Repo) bool
	switch sortMode {
	case "alpha":
		asc = byName
	case "id", "created":
		asc = func(a, b *Repo) bool { return a.id < b.id }
	case "updated":
		asc = func(a, b *Repo) bool {
			if !a.updated.Equal(b.updated) {
				return a.updated.Before(b.updated)
			}
			return a.id < b.id
		}
	case "size", "git_size", "lfs_size", "stars", "forks":
		asc = func(a, b *Repo) bool { return a.id < b.id }
	default:
		return nil, fmt.Sprintf("Invalid sort mode: \"%s\"", sortMode)
	}
	if order == "desc" {
		return func(a, b *Repo) bool { return asc(b, a) }, ""
	}
	return asc, ""
}
