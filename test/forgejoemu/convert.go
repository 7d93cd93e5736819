package forgejoemu

import (
	"crypto/md5"
	"encoding/hex"
	"net/url"
	"strings"
	"time"
)

// apiUser is Forgejo's structs.User, members in Forgejo's order.
type apiUser struct {
	ID            int64     `json:"id"`
	UserName      string    `json:"login"`
	LoginName     string    `json:"login_name"`
	SourceID      int64     `json:"source_id"`
	FullName      string    `json:"full_name"`
	Email         string    `json:"email"`
	AvatarURL     string    `json:"avatar_url"`
	HTMLURL       string    `json:"html_url"`
	Language      string    `json:"language"`
	IsAdmin       bool      `json:"is_admin"`
	LastLogin     time.Time `json:"last_login,omitempty"`
	Created       time.Time `json:"created,omitempty"`
	Restricted    bool      `json:"restricted"`
	IsActive      bool      `json:"active"`
	ProhibitLogin bool      `json:"prohibit_login"`
	Location      string    `json:"location"`
	Pronouns      string    `json:"pronouns"`
	Website       string    `json:"website"`
	Description   string    `json:"description"`
	Visibility    string    `json:"visibility"`
	Followers     int       `json:"followers_count"`
	Following     int       `json:"following_count"`
	StarredRepos  int       `json:"starred_repos_count"`
}

// toAPIUser is Forgejo's toUser: signed callers see the real e-mail, others
// a no-reply placeholder; only the user themself (authed) sees account details.
func (e *Emulator) toAPIUser(u *User, signed, authed bool) *apiUser {
	if u == nil {
		return nil
	}
	sum := md5.Sum([]byte(strings.ToLower(u.Email)))
	a := &apiUser{
		ID:         u.ID,
		UserName:   u.Login,
		Email:      strings.ToLower(u.Login) + "@noreply.localhost",
		AvatarURL:  e.origin + "/avatars/" + hex.EncodeToString(sum[:]),
		HTMLURL:    e.origin + "/" + url.PathEscape(u.Login),
		Created:    u.created,
		Visibility: "public",
	}
	if signed {
		a.Email = u.Email
	}
	if authed {
		a.LoginName = ""
		a.IsActive = true
		a.Language = "en-US"
		a.LastLogin = u.created
	}
	return a
}

// userFor is ToUser(user, doer).
func (e *Emulator) userFor(u, doer *User) *apiUser {
	return e.toAPIUser(u, doer != nil, doer != nil && doer.ID == u.ID)
}

// apiPermission is Forgejo's structs.Permission.
type apiPermission struct {
	Admin bool `json:"admin"`
	Push  bool `json:"push"`
	Pull  bool `json:"pull"`
}

// apiInternalTracker is Forgejo's structs.InternalTracker.
type apiInternalTracker struct {
	EnableTimeTracker                bool `json:"enable_time_tracker"`
	AllowOnlyContributorsToTrackTime bool `json:"allow_only_contributors_to_track_time"`
	EnableIssueDependencies          bool `json:"enable_issue_dependencies"`
}

// apiRepository is Forgejo's structs.Repository, members in Forgejo's order.
type apiRepository struct {
	ID                            int64               `json:"id"`
	Owner                         *apiUser            `json:"owner"`
	Name                          string              `json:"name"`
	FullName                      string              `json:"full_name"`
	Description                   string              `json:"description"`
	Empty                         bool                `json:"empty"`
	Private                       bool                `json:"private"`
	Fork                          bool                `json:"fork"`
	Template                      bool                `json:"template"`
	Parent                        *apiRepository      `json:"parent"`
	Mirror                        bool                `json:"mirror"`
	Size                          int                 `json:"size"`
	Language                      string              `json:"language"`
	LanguagesURL                  string              `json:"languages_url"`
	HTMLURL                       string              `json:"html_url"`
	URL                           string              `json:"url"`
	Link                          string              `json:"link"`
	SSHURL                        string              `json:"ssh_url"`
	CloneURL                      string              `json:"clone_url"`
	OriginalURL                   string              `json:"original_url"`
	Website                       string              `json:"website"`
	Stars                         int                 `json:"stars_count"`
	Forks                         int                 `json:"forks_count"`
	Watchers                      int                 `json:"watchers_count"`
	OpenIssues                    int                 `json:"open_issues_count"`
	OpenPulls                     int                 `json:"open_pr_counter"`
	Releases                      int                 `json:"release_counter"`
	DefaultBranch                 string              `json:"default_branch"`
	Archived                      bool                `json:"archived"`
	Created                       time.Time           `json:"created_at"`
	Updated                       time.Time           `json:"updated_at"`
	ArchivedAt                    time.Time           `json:"archived_at"`
	Permissions                   *apiPermission      `json:"permissions,omitempty"`
	HasIssues                     bool                `json:"has_issues"`
	InternalTracker               *apiInternalTracker `json:"internal_tracker,omitempty"`
	HasWiki                       bool                `json:"has_wiki"`
	GloballyEditableWiki          bool                `json:"globally_editable_wiki"`
	HasPullRequests               bool                `json:"has_pull_requests"`
	HasProjects                   bool                `json:"has_projects"`
	HasReleases                   bool                `json:"has_releases"`
	HasPackages                   bool                `json:"has_packages"`
	HasActions                    bool                `json:"has_actions"`
	IgnoreWhitespaceConflicts     bool                `json:"ignore_whitespace_conflicts"`
	AllowMerge                    bool                `json:"allow_merge_commits"`
	AllowRebase                   bool                `json:"allow_rebase"`
	AllowRebaseMerge              bool                `json:"allow_rebase_explicit"`
	AllowSquash                   bool                `json:"allow_squash_merge"`
	AllowFastForwardOnly          bool                `json:"allow_fast_forward_only_merge"`
	AllowRebaseUpdate             bool                `json:"allow_rebase_update"`
	DefaultDeleteBranchAfterMerge bool                `json:"default_delete_branch_after_merge"`
	DefaultMergeStyle             string              `json:"default_merge_style"`
	DefaultAllowMaintainerEdit    bool                `json:"default_allow_maintainer_edit"`
	AvatarURL                     string              `json:"avatar_url"`
	Internal                      bool                `json:"internal"`
	MirrorInterval                string              `json:"mirror_interval"`
	ObjectFormatName              string              `json:"object_format_name"`
	MirrorUpdated                 time.Time           `json:"mirror_updated,omitempty"`
	RepoTransfer                  *struct{}           `json:"repo_transfer"`
	Topics                        []string            `json:"topics"`
}

// repoHTMLURL is Repository.HTMLURL: ROOT_URL + escaped owner/name.
func (e *Emulator) repoHTMLURL(r *Repo) string {
	return e.origin + "/" + url.PathEscape(r.owner.Login) + "/" + url.PathEscape(r.name)
}

// toAPIRepoLocked is Forgejo's ToRepo for a caller with the given access
// mode; the owner is rendered as ToUserWithAccessMode does. Callers hold e.mu.
func (e *Emulator) toAPIRepoLocked(r *Repo, mode accessMode) *apiRepository {
	html := e.repoHTMLURL(r)
	api := e.origin + "/api/v1/repos/" + url.PathEscape(r.owner.Login) + "/" + url.PathEscape(r.name)
	host := strings.TrimPrefix(e.origin, "http://")
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	open := 0
	for _, p := range r.pulls {
		if !p.closed {
			open++
		}
	}
	return &apiRepository{
		ID:                   r.id,
		Owner:                e.toAPIUser(r.owner, mode != accessNone, false),
		Name:                 r.name,
		FullName:             r.FullName(),
		Description:          r.description,
		Empty:                r.empty,
		Private:              r.private,
		LanguagesURL:         api + "/languages",
		HTMLURL:              html,
		URL:                  api,
		SSHURL:               "git@" + host + ":" + url.PathEscape(r.owner.Login) + "/" + url.PathEscape(r.name) + ".git",
		CloneURL:             html + ".git",
		OpenPulls:            open,
		DefaultBranch:        r.defaultBranch,
		Created:              r.created,
		Updated:              r.updated,
		ArchivedAt:           time.Unix(0, 0).UTC(),
		Permissions:          &apiPermission{Admin: mode >= accessAdmin, Push: mode >= accessWrite, Pull: mode >= accessRead},
		HasIssues:            true,
		InternalTracker:      &apiInternalTracker{EnableTimeTracker: true, EnableIssueDependencies: true, AllowOnlyContributorsToTrackTime: true},
		HasWiki:              true,
		HasPullRequests:      true,
		HasProjects:          true,
		HasReleases:          true,
		HasPackages:          true,
		HasActions:           true,
		AllowMerge:           true,
		AllowRebase:          true,
		AllowRebaseMerge:     true,
		AllowSquash:          true,
		AllowFastForwardOnly: true,
		AllowRebaseUpdate:    true,
		DefaultMergeStyle:    "merge",
		ObjectFormatName:     r.objectFormat,
	}
}
