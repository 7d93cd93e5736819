package forgejoemu

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// TestRepoAccess checks Forgejo's answers to credentials, scopes and
// private repositories on the repository routes.
func TestRepoAccess(t *testing.T) {
	t.Parallel()
	e, d := sharedDemo(t)
	const pub, priv = "/api/v1/repos/demo/gateway", "/api/v1/repos/demo/notes"
	owner := e.IssueToken(d.Owner, "read:repository")
	revoked := e.IssueToken(d.Reader, "read:repository")
	e.RevokeToken(revoked)
	if err := e.SetPassword(d.Reader, "s3cret"); err != nil {
		t.Fatal(err)
	}
	tok := func(login string, scopes ...string) string { return e.IssueToken(login, scopes...) }
	scopeMsg := "token does not have at least one of required scope(s): [read:repository]"

	tests := []struct {
		name   string
		path   string
		auth   string
		status int
		msg    string // expected "message", when not 200
	}{
		{"anonymous public", pub, "", 200, ""},
		{"anonymous private is 404, not 403", priv, "", 404, notFoundMessage},
		{"pulls of a private repository, anonymous", priv + "/pulls", "", 404, notFoundMessage},
		{"collaborator token", priv, tokenAuth(d.ReaderToken), 200, ""},
		{"collaborator pulls", priv + "/pulls", tokenAuth(d.ReaderToken), 200, ""},
		{"non-collaborator token", priv, tokenAuth(d.BotToken), 404, notFoundMessage},
		{"owner token", priv, tokenAuth(owner), 200, ""},
		{"Bearer", priv, "Bearer " + d.ReaderToken, 200, ""},
		{"bearer in any case", priv, "bEaReR " + d.ReaderToken, 200, ""},
		{"Token with a capital is no method: anonymous", priv, "Token " + d.ReaderToken, 404, notFoundMessage},
		{"invalid token", pub, tokenAuth("0123456789abcdef0123456789abcdef01234567"), 401, "user does not exist [uid: 0, name: ]"},
		{"invalid bearer", pub, "Bearer nope", 401, "user does not exist [uid: 0, name: ]"},
		{"revoked token", priv, tokenAuth(revoked), 401, "user does not exist [uid: 0, name: ]"},
		{"invalid token on an unknown route", "/api/v1/nothing", tokenAuth("nope"), 401, "user does not exist [uid: 0, name: ]"},
		{"token without read:repository", pub, tokenAuth(tok(d.Reader, "read:issue")), 403, scopeMsg},
		{"token without read:repository on search", "/api/v1/repos/search", tokenAuth(tok(d.Reader, "write:issue")), 403, scopeMsg},
		{"token without read:repository on a private repository it may read", priv, tokenAuth(tok(d.Reader, "read:user")), 403, scopeMsg},
		{"write implies read", priv, tokenAuth(tok(d.Reader, "write:repository")), 200, ""},
		{"all", priv, tokenAuth(tok(d.Reader, "all")), 200, ""},
		{"no scopes means all", priv, tokenAuth(tok(d.Reader)), 200, ""},
		{"public-only on a public repository", pub, tokenAuth(tok(d.Reader, "public-only", "read:repository")), 200, ""},
		{"public-only on a private repository", priv, tokenAuth(tok(d.Reader, "public-only", "read:repository")), 403, "token scope is limited to public repos"},
		{"public-only still 404 where there is no access", priv, tokenAuth(tok(d.Bot, "public-only", "read:repository")), 404, notFoundMessage},
		{"unparseable scope", pub, tokenAuth(tok(d.Reader, "read:everything")), 403, "checking scope failed: invalid access token scope: read:everything"},
		{"Basic with the token as password", priv, basic(d.Reader, d.ReaderToken), 200, ""},
		{"Basic with the token as user name", priv, basic(d.ReaderToken, ""), 200, ""},
		{"Basic with x-oauth-basic", priv, basic(d.ReaderToken, "x-oauth-basic"), 200, ""},
		{"Basic token keeps its scopes", pub, basic(d.Reader, tok(d.Reader, "read:issue")), 403, scopeMsg},
		{"Basic password", priv, basic(d.Reader, "s3cret"), 200, ""},
		{"Basic wrong password", priv, basic(d.Reader, "wrong"), 401, fmt.Sprintf("user's password is invalid [uid: %d, name: alice]", userID(t, e, d.Reader))},
		{"Basic without a password set", priv, basic(d.Bot, "x"), 401, fmt.Sprintf("user's password isn't set [uid: %d, name: review-bot]", userID(t, e, d.Bot))},
		{"Basic unknown user", priv, basic("nobody", "x"), 401, "user does not exist [uid: 0, name: nobody]"},
		{"unknown scheme is anonymous", pub, "Digest abc", 200, ""},
		{"unknown repository", "/api/v1/repos/demo/missing", "", 404, notFoundMessage},
		{"unknown pull request", pub + "/pulls/99", "", 404, notFoundMessage},
		{"owner and name ignore case", "/api/v1/repos/DEMO/GateWay", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := get(t, e, tt.path, tt.auth)
			if a.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", a.status, tt.status, a.body)
			}
			if got := a.header.Get("Content-Type"); got != "application/json;charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
			if tt.status == 200 {
				return
			}
			body := decode[map[string]any](t, a)
			if body["message"] != tt.msg || body["url"] != e.URL()+"/api/swagger" {
				t.Errorf("body = %s, want message %q", a.body, tt.msg)
			}
			if _, ok := body["errors"]; (tt.status == 404) != ok {
				t.Errorf("errors member present = %v on %d: %s", ok, tt.status, a.body)
			}
		})
	}
}

func userID(t *testing.T, e *Emulator, login string) int64 {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.userLocked(login)
	if u == nil {
		t.Fatalf("no user %s", login)
	}
	return u.ID
}

func TestUnknownOwner(t *testing.T) {
	t.Parallel()
	e, _ := sharedDemo(t)
	a := get(t, e, "/api/v1/repos/ghost/gateway", "")
	body := decode[apiNotFound](t, a)
	if a.status != 404 || body.Message != "GetUserByName" ||
		len(body.Errors) != 1 || body.Errors[0] != "user redirect does not exist [name: ghost]" {
		t.Errorf("got %d %s", a.status, a.body)
	}
}

// TestSearchVisibility checks which repositories each caller finds.
func TestSearchVisibility(t *testing.T) {
	t.Parallel()
	e, d := seeded(t)
	if _, err := e.CreateRepo("other", "hidden", RepoOptions{Private: true, Description: "gateway notes"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		query string
		auth  string
		want  []string
	}{
		{"anonymous", "", "", []string{"demo/gateway"}},
		{"collaborator", "", tokenAuth(d.ReaderToken), []string{"demo/gateway", "demo/notes"}},
		{"non-collaborator", "", tokenAuth(d.BotToken), []string{"demo/gateway"}},
		{"owner of another private repository", "", tokenAuth(e.IssueToken("other")), []string{"demo/gateway", "other/hidden"}},
		{"private=false", "private=false", tokenAuth(d.ReaderToken), []string{"demo/gateway"}},
		{"is_private=true", "is_private=true", tokenAuth(d.ReaderToken), []string{"demo/notes"}},
		{"public-only token", "", tokenAuth(e.IssueToken(d.Reader, "public-only", "read:repository")), []string{"demo/gateway"}},
		{"keyword", "q=NOT", tokenAuth(d.ReaderToken), []string{"demo/notes"}},
		{"keyword list", "q=xyz,gate", tokenAuth(d.ReaderToken), []string{"demo/gateway"}},
		{"owner/name keyword", "q=dem/not", tokenAuth(d.ReaderToken), []string{"demo/notes"}},
		{"description only with includeDesc", "q=notes&includeDesc=true", tokenAuth(e.IssueToken("other")), []string{"other/hidden"}},
		{"description ignored by default", "q=emulator", "", nil},
		{"description searched", "q=emulator&includeDesc=1", "", []string{"demo/gateway"}},
		{"sort by id descending", "sort=id&order=desc", tokenAuth(d.ReaderToken), []string{"demo/notes", "demo/gateway"}},
		{"no forks", "mode=fork", "", nil},
		{"uid", "uid=" + fmt.Sprint(userID(t, e, d.Owner)), "", []string{"demo/gateway"}},
		{"uid of a collaborator", "uid=" + fmt.Sprint(userID(t, e, d.Reader)), tokenAuth(d.ReaderToken), []string{"demo/notes"}},
		{"uid, collaborations only", "mode=collaborative&uid=" + fmt.Sprint(userID(t, e, d.Owner)), tokenAuth(d.ReaderToken), nil},
		{"uid, owned only", "exclusive=true&uid=" + fmt.Sprint(userID(t, e, d.Reader)), tokenAuth(d.ReaderToken), nil},
		{"collaborative without uid filters nothing", "mode=collaborative", "", []string{"demo/gateway"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := get(t, e, "/api/v1/repos/search?"+tt.query, tt.auth)
			res := decode[struct {
				OK   bool `json:"ok"`
				Data []struct {
					FullName string `json:"full_name"`
				} `json:"data"`
			}](t, a)
			var got []string
			for _, r := range res.Data {
				got = append(got, r.FullName)
			}
			if a.status != 200 || !res.OK || strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("status %d ok %v repos %v, want %v", a.status, res.OK, got, tt.want)
			}
			if n := a.header.Get("X-Total-Count"); n != fmt.Sprint(len(tt.want)) {
				t.Errorf("X-Total-Count = %s, want %d", n, len(tt.want))
			}
		})
	}
	for _, q := range []string{"mode=nope", "sort=nope", "sort=alpha&order=sideways"} {
		if a := get(t, e, "/api/v1/repos/search?"+q, ""); a.status != 422 {
			t.Errorf("%s: status %d, want 422", q, a.status)
		}
	}
}

// TestRepositoryPermissions checks the permissions member per caller.
func TestRepositoryPermissions(t *testing.T) {
	t.Parallel()
	e, d := sharedDemo(t)
	tests := []struct {
		auth string
		want apiPermission
	}{
		{"", apiPermission{Pull: true}},
		{tokenAuth(d.BotToken), apiPermission{Pull: true, Push: true}},
		{tokenAuth(e.IssueToken(d.Owner)), apiPermission{Pull: true, Push: true, Admin: true}},
	}
	for _, tt := range tests {
		a := get(t, e, "/api/v1/repos/demo/gateway", tt.auth)
		got := decode[apiRepository](t, a)
		if got.Permissions == nil || *got.Permissions != tt.want {
			t.Errorf("%q: permissions %+v, want %+v", tt.auth, got.Permissions, tt.want)
		}
	}
}
