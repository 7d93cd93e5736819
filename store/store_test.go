package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

const (
	sha1 = "0123456789abcdef0123456789abcdef01234567"
	sha2 = "89abcdef0123456789abcdef0123456789abcdef"
)

// suite is the behaviour both backends must share. Each case runs on a fresh
// store of each backend.
var suite = []struct {
	name string
	run  func(t *testing.T, s store.Store)
}{
	{"accounts", testAccounts},
	{"projects", testProjects},
	{"members", testMembers},
	{"repositories", testRepositories},
	{"document sources", testDocumentSources},
	{"tenant isolation", testTenantIsolation},
	{"source xor and same-project constraints in SQL", testSourceConstraintsInSQL},
	{"consents and access tokens", testGrantsAndAccessTokens},
	{"access token expiry", testAccessTokenExpiry},
	{"token revocation", testTokenRevocation},
	{"removing a member revokes their consents", testRemoveMemberRevokes},
	{"legacy tokens", testLegacyTokens},
	{"oauth clients", testClients},
	{"secrets are stored only as hashes", testSecretsNeverStored},
	{"list and delete clients", testListDeleteClients},
	{"oauth purge", testOAuthPurge},
	{"concurrent oauth purges delete each row once", testConcurrentPurges},
}

func TestStore(t *testing.T) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.Each(t, tc.run)
		})
	}
}

// result carries a (value, error) pair to must, since Go passes a
// multi-value call only as the whole argument list.
type result[T any] struct {
	v   T
	err error
}

func try[T any](v T, err error) result[T] { return result[T]{v, err} }

// must returns the value, failing the test on an error.
func (r result[T]) must(t testing.TB) T {
	t.Helper()
	if r.err != nil {
		t.Fatalf("unexpected error: %v", r.err)
	}
	return r.v
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

var seq struct {
	sync.Mutex
	n int
}

// unique returns a name no other case uses.
func unique(prefix string) string {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), seq.n)
}

// fixture is a project with a member and a linked repository.
type fixture struct {
	project store.Project
	repo    store.Repository
	subject string
}

func newFixture(t testing.TB, s store.Store) fixture {
	t.Helper()
	ctx := context.Background()
	p := try(s.CreateProject(ctx, "", unique("project"))).must(t)
	r := try(s.LinkRepository(ctx, p.ID, "h8v6", "heyaira", 42)).must(t)
	subject := unique("subject")
	if err := s.AddMember(ctx, p.ID, subject); err != nil {
		t.Fatal(err)
	}
	return fixture{project: p, repo: r, subject: subject}
}

func (f fixture) source(t testing.TB, s store.Store, role, path string) store.DocumentSource {
	t.Helper()
	return try(s.AddDocumentSource(context.Background(), store.NewDocumentSource{
		ProjectID: f.project.ID, RepositoryID: f.repo.ID, Role: role, Path: path, CommitSHA: sha1,
	})).must(t)
}

func (f fixture) consent(t testing.TB, s store.Store, clientID string, scopes ...string) store.Consent {
	t.Helper()
	return try(s.CreateConsent(context.Background(), f.project.ID, f.subject, clientID, scopes)).must(t)
}

func testAccounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	name := unique("account")
	a := try(s.CreateAccount(ctx, name)).must(t)
	if !strings.HasPrefix(a.ID, "acc_") || len(a.ID) != len("acc_")+26 {
		t.Errorf("account ID %q: want acc_ and 26 random characters", a.ID)
	}
	got := try(s.GetAccount(ctx, a.ID)).must(t)
	if got != a {
		t.Errorf("GetAccount = %+v, want %+v", got, a)
	}
	_, err := s.CreateAccount(ctx, name)
	wantErr(t, err, store.ErrConflict)
	_, err = s.GetAccount(ctx, "acc_missing")
	wantErr(t, err, store.ErrNotFound)
	for _, bad := range []string{"", " padded", "tab\there", strings.Repeat("x", 201)} {
		_, err = s.CreateAccount(ctx, bad)
		wantErr(t, err, store.ErrInvalid)
	}
}

func testProjects(t *testing.T, s store.Store) {
	ctx := context.Background()
	name := unique("project")
	p1 := try(s.CreateProject(ctx, "", name)).must(t)
	p2 := try(s.CreateProject(ctx, "", unique("project"))).must(t)
	if p1.AccountID == "" || p1.AccountID != p2.AccountID {
		t.Fatalf("default account: %q and %q, want one non-empty ID", p1.AccountID, p2.AccountID)
	}
	def := try(s.GetAccount(ctx, p1.AccountID)).must(t)
	if def.Name != store.DefaultAccountName {
		t.Errorf("default account name %q", def.Name)
	}
	if !strings.HasPrefix(p1.ID, "prj_") {
		t.Errorf("project ID %q", p1.ID)
	}
	if got := try(s.GetProject(ctx, p1.ID)).must(t); got != p1 {
		t.Errorf("GetProject = %+v, want %+v", got, p1)
	}

	_, err := s.CreateProject(ctx, "", name)
	wantErr(t, err, store.ErrConflict)

	other := try(s.CreateAccount(ctx, unique("account"))).must(t)
	p3 := try(s.CreateProject(ctx, other.ID, name)).must(t) // same name, other account
	if got := try(s.ListProjects(ctx, other.ID)).must(t); len(got) != 1 || got[0] != p3 {
		t.Errorf("ListProjects(other) = %+v", got)
	}
	all := try(s.ListProjects(ctx, "")).must(t)
	for _, p := range []store.Project{p1, p2, p3} {
		if !slices.Contains(all, p) {
			t.Errorf("ListProjects(\"\") misses %s", p.ID)
		}
	}

	_, err = s.CreateProject(ctx, "acc_missing", unique("project"))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetProject(ctx, "prj_missing")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateProject(ctx, "", "")
	wantErr(t, err, store.ErrInvalid)
}

func testMembers(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := try(s.CreateProject(ctx, "", unique("b-project"))).must(t)
	b := try(s.CreateProject(ctx, "", unique("a-project"))).must(t)
	subject := unique("subject")
	for range 2 { // adding twice is fine
		if err := s.AddMember(ctx, a.ID, subject); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddMember(ctx, b.ID, subject); err != nil {
		t.Fatal(err)
	}
	if ok := try(s.IsMember(ctx, a.ID, subject)).must(t); !ok {
		t.Error("IsMember = false after AddMember")
	}
	if ok := try(s.IsMember(ctx, a.ID, "someone-else")).must(t); ok {
		t.Error("IsMember(stranger) = true")
	}
	got := try(s.ListProjectsForSubject(ctx, subject)).must(t)
	if len(got) != 2 || got[0] != b || got[1] != a {
		t.Errorf("ListProjectsForSubject = %+v, want [%s %s] (by name)", got, b.ID, a.ID)
	}
	wantErr(t, s.AddMember(ctx, "prj_missing", subject), store.ErrNotFound)
	wantErr(t, s.AddMember(ctx, a.ID, ""), store.ErrInvalid)
	wantErr(t, s.RemoveMember(ctx, a.ID, "someone-else"), store.ErrNotFound)
	if err := s.RemoveMember(ctx, a.ID, subject); err != nil {
		t.Fatal(err)
	}
	if ok := try(s.IsMember(ctx, a.ID, subject)).must(t); ok {
		t.Error("IsMember = true after RemoveMember")
	}
}

func testRepositories(t *testing.T, s store.Store) {
	ctx := context.Background()
	p := try(s.CreateProject(ctx, "", unique("project"))).must(t)
	r := try(s.LinkRepository(ctx, p.ID, "H8v6", "HeyAira", 7)).must(t)
	if !strings.HasPrefix(r.ID, "rep_") || r.InstallationID != 7 || r.RevokedAt != nil {
		t.Errorf("LinkRepository = %+v", r)
	}
	_, err := s.LinkRepository(ctx, p.ID, "h8v6", "heyaira", 8)
	wantErr(t, err, store.ErrConflict) // case-insensitive per project

	if got := try(s.FindRepository(ctx, p.ID, "h8V6", "heyAIRA")).must(t); got.ID != r.ID {
		t.Errorf("FindRepository = %s, want %s", got.ID, r.ID)
	}
	if got := try(s.GetRepository(ctx, p.ID, r.ID)).must(t); got != r {
		t.Errorf("GetRepository = %+v, want %+v", got, r)
	}

	for _, tc := range []struct {
		owner, name string
		inst        int64
	}{
		{"h8v6", "x", 0}, {"h8v6", "x", -1}, {"", "x", 1}, {"-bad", "x", 1}, {"h8v6", "..", 1}, {"h8v6", "a/b", 1},
	} {
		_, err := s.LinkRepository(ctx, p.ID, tc.owner, tc.name, tc.inst)
		wantErr(t, err, store.ErrInvalid)
	}
	_, err = s.LinkRepository(ctx, "prj_missing", "o", "n", 1)
	wantErr(t, err, store.ErrNotFound)

	src := try(s.AddDocumentSource(ctx, store.NewDocumentSource{
		ProjectID: p.ID, RepositoryID: r.ID, Role: store.RoleRuntime, Path: "README.md", CommitSHA: sha1,
	})).must(t)
	revoked := try(s.RevokeRepository(ctx, p.ID, r.ID)).must(t)
	if revoked.RevokedAt == nil {
		t.Fatal("RevokeRepository left RevokedAt nil")
	}
	again := try(s.RevokeRepository(ctx, p.ID, r.ID)).must(t)
	if !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Error("revoking twice changed RevokedAt")
	}
	gotSrc := try(s.GetDocumentSource(ctx, p.ID, src.ID)).must(t)
	if gotSrc.Active() || gotSrc.RevokedAt == nil {
		t.Errorf("source of a revoked repository: %+v", gotSrc)
	}
	_, err = s.FindRepository(ctx, p.ID, "h8v6", "heyaira")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AddDocumentSource(ctx, store.NewDocumentSource{
		ProjectID: p.ID, RepositoryID: r.ID, Role: store.RoleRuntime, Path: "x.md", CommitSHA: sha1,
	})
	wantErr(t, err, store.ErrInvalid)

	relinked := try(s.LinkRepository(ctx, p.ID, "h8v6", "heyaira", 9)).must(t)
	if relinked.ID == r.ID {
		t.Error("relink reused the revoked ID")
	}
	if got := try(s.ListRepositories(ctx, p.ID, false)).must(t); len(got) != 1 || got[0].ID != relinked.ID {
		t.Errorf("ListRepositories(active) = %+v", got)
	}
	if got := try(s.ListRepositories(ctx, p.ID, true)).must(t); len(got) != 2 {
		t.Errorf("ListRepositories(all) = %d rows, want 2", len(got))
	}
}

func testDocumentSources(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	pinned := try(s.AddDocumentSource(ctx, store.NewDocumentSource{
		ProjectID: f.project.ID, RepositoryID: f.repo.ID, Role: store.RoleRuntime,
		Path: "docs/CONTINUITY_PROTOCOL.md", CommitSHA: sha1,
	})).must(t)
	if !strings.HasPrefix(pinned.ID, "src_") || pinned.FragmentLimit != store.MaxFragmentLimit || !pinned.Pinned() || !pinned.Active() {
		t.Errorf("pinned source = %+v", pinned)
	}
	if pinned.Repository.Owner != "h8v6" || pinned.Repository.InstallationID != 42 {
		t.Errorf("source repository = %+v", pinned.Repository)
	}
	tracking := try(s.AddDocumentSource(ctx, store.NewDocumentSource{
		ProjectID: f.project.ID, RepositoryID: f.repo.ID, Role: store.RoleInstruction,
		Path: "docs/agents/core.md", TrackingRef: "main", FragmentLimit: 1024,
	})).must(t)
	if tracking.Pinned() || tracking.CommitSHA != "" || tracking.TrackingRef != "main" || tracking.FragmentLimit != 1024 {
		t.Errorf("tracking source = %+v", tracking)
	}
	if got := try(s.GetDocumentSource(ctx, f.project.ID, tracking.ID)).must(t); !sameSource(got, tracking) {
		t.Errorf("GetDocumentSource = %+v, want %+v", got, tracking)
	}

	_, err := s.AddDocumentSource(ctx, store.NewDocumentSource{
		ProjectID: f.project.ID, RepositoryID: f.repo.ID, Role: store.RoleRuntime,
		Path: "docs/CONTINUITY_PROTOCOL.md", CommitSHA: sha1,
	})
	wantErr(t, err, store.ErrConflict) // identical active source

	base := store.NewDocumentSource{ProjectID: f.project.ID, RepositoryID: f.repo.ID, Role: "runtime", Path: "a.md", CommitSHA: sha2}
	for name, mutate := range map[string]func(*store.NewDocumentSource){
		"commit and branch":   func(n *store.NewDocumentSource) { n.TrackingRef = "main" },
		"neither":             func(n *store.NewDocumentSource) { n.CommitSHA = "" },
		"short sha":           func(n *store.NewDocumentSource) { n.CommitSHA = "abc123" },
		"uppercase sha":       func(n *store.NewDocumentSource) { n.CommitSHA = strings.ToUpper(sha2) },
		"tag ref":             func(n *store.NewDocumentSource) { n.CommitSHA, n.TrackingRef = "", "refs/tags/v1" },
		"bad branch":          func(n *store.NewDocumentSource) { n.CommitSHA, n.TrackingRef = "", "a..b" },
		"absolute path":       func(n *store.NewDocumentSource) { n.Path = "/etc/passwd" },
		"traversal":           func(n *store.NewDocumentSource) { n.Path = "docs/../../x" },
		"backslash":           func(n *store.NewDocumentSource) { n.Path = `docs\x.md` },
		"fragment limit high": func(n *store.NewDocumentSource) { n.FragmentLimit = 65537 },
		"fragment limit low":  func(n *store.NewDocumentSource) { n.FragmentLimit = -1 },
		"empty role":          func(n *store.NewDocumentSource) { n.Role = "" },
	} {
		n := base
		mutate(&n)
		_, err := s.AddDocumentSource(ctx, n)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: error = %v, want ErrInvalid", name, err)
		}
	}

	runtime := try(s.ListActiveSourcesByRole(ctx, f.project.ID, store.RoleRuntime)).must(t)
	if len(runtime) != 1 || runtime[0].ID != pinned.ID {
		t.Errorf("ListActiveSourcesByRole(runtime) = %+v", runtime)
	}
	revoked := try(s.RevokeDocumentSource(ctx, f.project.ID, pinned.ID)).must(t)
	if revoked.RevokedAt == nil || revoked.Active() {
		t.Errorf("RevokeDocumentSource = %+v", revoked)
	}
	got := try(s.GetDocumentSource(ctx, f.project.ID, pinned.ID)).must(t)
	if got.RevokedAt == nil || !got.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Errorf("revoked source reads back as %+v", got)
	}
	if n := len(try(s.ListActiveSourcesByRole(ctx, f.project.ID, store.RoleRuntime)).must(t)); n != 0 {
		t.Errorf("revoked source still active (%d)", n)
	}
	if n := len(try(s.ListDocumentSources(ctx, f.project.ID, false)).must(t)); n != 1 {
		t.Errorf("ListDocumentSources(active) = %d, want 1", n)
	}
	all := try(s.ListDocumentSources(ctx, f.project.ID, true)).must(t)
	if len(all) != 2 || all[0].ID != pinned.ID || all[1].ID != tracking.ID {
		t.Errorf("ListDocumentSources(all) = %+v", all)
	}
	// Once revoked, the same source may be allowlisted again.
	try(s.AddDocumentSource(ctx, store.NewDocumentSource{
		ProjectID: f.project.ID, RepositoryID: f.repo.ID, Role: store.RoleRuntime,
		Path: "docs/CONTINUITY_PROTOCOL.md", CommitSHA: sha1,
	})).must(t)
	_, err = s.RevokeDocumentSource(ctx, f.project.ID, "src_missing")
	wantErr(t, err, store.ErrNotFound)
}

// sameSource compares sources field by field (times by Equal).
func sameSource(a, b store.DocumentSource) bool {
	return a.ID == b.ID && a.ProjectID == b.ProjectID && a.Role == b.Role && a.Path == b.Path &&
		a.CommitSHA == b.CommitSHA && a.TrackingRef == b.TrackingRef && a.FragmentLimit == b.FragmentLimit &&
		a.CreatedAt.Equal(b.CreatedAt) && (a.RevokedAt == nil) == (b.RevokedAt == nil) &&
		a.Repository.ID == b.Repository.ID && a.Repository.InstallationID == b.Repository.InstallationID
}

func testTenantIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s), newFixture(t, s)
	srcA := a.source(t, s, store.RoleRuntime, "docs/a.md")

	_, errOther := s.GetDocumentSource(ctx, b.project.ID, srcA.ID)
	_, errAbsent := s.GetDocumentSource(ctx, b.project.ID, "src_"+strings.Repeat("a", 26))
	wantErr(t, errOther, store.ErrNotFound)
	if errOther.Error() != errAbsent.Error() {
		t.Errorf("another project's source (%q) is distinguishable from an absent one (%q)", errOther, errAbsent)
	}
	_, err := s.RevokeDocumentSource(ctx, b.project.ID, srcA.ID)
	wantErr(t, err, store.ErrNotFound)
	if got := try(s.GetDocumentSource(ctx, a.project.ID, srcA.ID)).must(t); got.RevokedAt != nil {
		t.Error("project B revoked project A's source")
	}
	if got := try(s.ListDocumentSources(ctx, b.project.ID, true)).must(t); len(got) != 0 {
		t.Errorf("project B lists %d sources of others", len(got))
	}
	_, err = s.GetRepository(ctx, b.project.ID, a.repo.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.RevokeRepository(ctx, b.project.ID, a.repo.ID)
	wantErr(t, err, store.ErrNotFound)
	// B cannot allowlist a document of A's repository.
	_, err = s.AddDocumentSource(ctx, store.NewDocumentSource{
		ProjectID: b.project.ID, RepositoryID: a.repo.ID, Role: store.RoleRuntime, Path: "x.md", CommitSHA: sha1,
	})
	wantErr(t, err, store.ErrNotFound)
}

func testSourceConstraintsInSQL(t *testing.T, s store.Store) {
	ctx := context.Background()
	db := store.RawDB(s)
	a, b := newFixture(t, s), newFixture(t, s)
	now := "2026-01-01T00:00:00.000000Z"
	insert := func(id, projectID, repoID string, commit, ref any) error {
		_, err := db.ExecContext(ctx, `INSERT INTO document_sources
			(id, project_id, repository_id, role, path, commit_sha, tracking_ref, fragment_limit, created_at)
			VALUES ($1, $2, $3, 'runtime', 'x.md', $4, $5, 100, `+timeLiteral(s, now)+`)`,
			id, projectID, repoID, commit, ref)
		return err
	}
	for _, tc := range []struct {
		name          string
		project, repo string
		commit, ref   any
		ok            bool
	}{
		{"pinned", a.project.ID, a.repo.ID, sha1, nil, true},
		{"tracking", a.project.ID, a.repo.ID, nil, "main", true},
		{"both", a.project.ID, a.repo.ID, sha2, "main", false},
		{"neither", a.project.ID, a.repo.ID, nil, nil, false},
		{"short commit", a.project.ID, a.repo.ID, "abc", nil, false},
		{"other project's repository", b.project.ID, a.repo.ID, sha1, nil, false},
	} {
		err := insert(unique("src"), tc.project, tc.repo, tc.commit, tc.ref)
		if (err == nil) != tc.ok {
			t.Errorf("%s: insert error = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// timeLiteral is a SQL literal for a stored time on the store's backend.
func timeLiteral(s store.Store, v string) string {
	if isPostgres(s) {
		return "'" + v + "'::timestamptz"
	}
	return "'" + v + "'"
}

func isPostgres(s store.Store) bool {
	var v string
	return store.RawDB(s).QueryRow(`SELECT version()`).Scan(&v) == nil && strings.Contains(v, "PostgreSQL")
}

func testGrantsAndAccessTokens(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	_, err := s.CreateConsent(ctx, f.project.ID, "stranger", "cli_x", []string{"documents:read"})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.CreateConsent(ctx, f.project.ID, f.subject, "cli_x", nil)
	wantErr(t, err, store.ErrInvalid)
	_, err = s.CreateConsent(ctx, f.project.ID, f.subject, "cli_x", []string{"bad scope"})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.CreateConsent(ctx, "prj_missing", f.subject, "cli_x", []string{"documents:read"})
	wantErr(t, err, store.ErrNotFound)

	g := f.consent(t, s, "cli_x", "workflow:write", "documents:read", "documents:read")
	if !slices.Equal(g.Scopes, []string{"documents:read", "workflow:write"}) {
		t.Errorf("scopes = %q, want a sorted set", g.Scopes)
	}
	if got := try(s.GetConsent(ctx, g.ID)).must(t); got.ID != g.ID || !slices.Equal(got.Scopes, g.Scopes) {
		t.Errorf("GetConsent = %+v", got)
	}

	tok := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
	if !strings.HasPrefix(tok.Secret, store.AccessTokenPrefix) || tok.Kind != store.TokenAccess || tok.FamilyID != "" {
		t.Errorf("IssueAccessToken = %+v", tok)
	}
	p := try(s.LookupAccessToken(ctx, tok.Secret)).must(t)
	want := store.TokenConsent{
		ConsentID: g.ID, ProjectID: f.project.ID, Subject: f.subject, ClientID: "cli_x",
		Scopes: g.Scopes, ExpiresAt: tok.ExpiresAt,
	}
	if p.ConsentID != want.ConsentID || p.ProjectID != want.ProjectID || p.Subject != want.Subject ||
		p.ClientID != want.ClientID || !slices.Equal(p.Scopes, want.Scopes) || !p.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("LookupAccessToken = %+v, want %+v", p, want)
	}
	if !p.HasScope("documents:read") || p.HasScope("documents:write") {
		t.Error("HasScope wrong")
	}

	_, err = s.LookupAccessToken(ctx, store.RefreshTokenPrefix+strings.TrimPrefix(tok.Secret, store.AccessTokenPrefix))
	wantErr(t, err, store.ErrNotFound) // a refresh token is no bearer
	_, err = s.LookupAccessToken(ctx, store.AccessTokenPrefix+"forged")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.LookupAccessToken(ctx, "")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.IssueAccessToken(ctx, g.ID, 0)
	wantErr(t, err, store.ErrInvalid)

	revoked := try(s.RevokeConsent(ctx, g.ID)).must(t)
	if revoked.RevokedAt == nil {
		t.Fatal("RevokeConsent left RevokedAt nil")
	}
	_, err = s.LookupAccessToken(ctx, tok.Secret)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.IssueAccessToken(ctx, g.ID, time.Hour)
	wantErr(t, err, store.ErrNotFound)
	if n := len(try(s.ListConsents(ctx, f.project.ID, false)).must(t)); n != 0 {
		t.Errorf("ListConsents(active) = %d after revocation", n)
	}
	if n := len(try(s.ListConsents(ctx, f.project.ID, true)).must(t)); n != 1 {
		t.Errorf("ListConsents(all) = %d, want 1", n)
	}
}

func testAccessTokenExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	g := f.consent(t, s, "cli_x", "documents:read")
	short := try(s.IssueAccessToken(ctx, g.ID, 5*time.Millisecond)).must(t)
	long := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
	time.Sleep(20 * time.Millisecond)
	_, err := s.LookupAccessToken(ctx, short.Secret)
	wantErr(t, err, store.ErrNotFound)
	try(s.LookupAccessToken(ctx, long.Secret)).must(t) // still within its hour
}

// testTokenRevocation is revocation as the authorization server does it
// (fosite → RevokeTokenHash for a lone access token, RevokeTokenFamily for
// an authorization): idempotent, and nothing else is touched.
func testTokenRevocation(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	g := f.consent(t, s, "cli_x", "documents:read")
	a := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
	b := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
	for range 2 { // idempotent
		if err := s.RevokeTokenHash(ctx, store.HashToken(a.Secret)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.LookupAccessToken(ctx, a.Secret)
	wantErr(t, err, store.ErrNotFound)
	try(s.LookupAccessToken(ctx, b.Secret)).must(t)

	c, _ := newCode(t, s, "documents:read")
	access, refresh, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	other, _ := newCode(t, s, "documents:read")
	otherAccess, _, otherHashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, other.CodeHash, otherHashed...); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.RevokeTokenFamily(ctx, c.RequestID); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.LookupAccessToken(ctx, access)
	wantErr(t, err, store.ErrNotFound) // the family's access token
	if rec := try(s.GetToken(ctx, store.HashToken(refresh))).must(t); !rec.Revoked {
		t.Fatal("the family's refresh token is not revoked")
	}
	_, _, again := pair(t)
	wantErr(t, s.RotateRefreshTokenHash(ctx, store.HashToken(refresh), again...), store.ErrTokenReused)
	try(s.LookupAccessToken(ctx, otherAccess)).must(t) // another family lives on
	wantErr(t, s.RevokeTokenFamily(ctx, ""), store.ErrInvalid)
}

func testRemoveMemberRevokes(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	g := f.consent(t, s, "cli_x", "documents:read")
	tok := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
	if err := s.RemoveMember(ctx, f.project.ID, f.subject); err != nil {
		t.Fatal(err)
	}
	_, err := s.LookupAccessToken(ctx, tok.Secret)
	wantErr(t, err, store.ErrNotFound)
	if got := try(s.GetConsent(ctx, g.ID)).must(t); got.RevokedAt == nil {
		t.Error("consent of a removed member is still active")
	}
}

func testLegacyTokens(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	issued := try(s.IssueLegacyToken(ctx, f.project.ID, []string{"task", "memory", "task"})).must(t)
	if !strings.HasPrefix(issued.Secret, store.LegacyTokenPrefix) || !strings.HasPrefix(issued.ID, "ltk_") {
		t.Errorf("IssueLegacyToken = %+v", issued.LegacyToken)
	}
	if !slices.Equal(issued.Permissions, []string{"memory", "task"}) {
		t.Errorf("permissions = %q", issued.Permissions)
	}
	got := try(s.LookupLegacyToken(ctx, issued.Secret)).must(t)
	if got.ID != issued.ID || got.ProjectID != f.project.ID || !got.HasPermission("task") || got.HasPermission("documents:read") {
		t.Errorf("LookupLegacyToken = %+v", got)
	}
	for _, perms := range [][]string{nil, {}, {"documents:read"}, {"memory", "admin"}, {"Memory"}} {
		_, err := s.IssueLegacyToken(ctx, f.project.ID, perms)
		wantErr(t, err, store.ErrInvalid)
	}
	_, err := s.IssueLegacyToken(ctx, "prj_missing", []string{"memory"})
	wantErr(t, err, store.ErrNotFound)

	// A legacy token is no OAuth bearer, and the reverse.
	_, err = s.LookupAccessToken(ctx, issued.Secret)
	wantErr(t, err, store.ErrNotFound)

	other := newFixture(t, s)
	_, err = s.RevokeLegacyToken(ctx, other.project.ID, issued.ID)
	wantErr(t, err, store.ErrNotFound)
	revoked := try(s.RevokeLegacyToken(ctx, f.project.ID, issued.ID)).must(t)
	if revoked.RevokedAt == nil {
		t.Error("RevokeLegacyToken left RevokedAt nil")
	}
	_, err = s.LookupLegacyToken(ctx, issued.Secret)
	wantErr(t, err, store.ErrNotFound)
}

func testClients(t *testing.T, s store.Store) {
	ctx := context.Background()
	uris := []string{"https://app.example/cb", "http://127.0.0.1:33418/callback"}
	c := try(s.RegisterClient(ctx, "Claude", uris)).must(t)
	if !strings.HasPrefix(c.ClientID, "cli_") {
		t.Errorf("client ID %q", c.ClientID)
	}
	got := try(s.GetClient(ctx, c.ClientID)).must(t)
	if got.Name != "Claude" || !slices.Equal(got.RedirectURIs, uris) || !got.CreatedAt.Equal(c.CreatedAt) {
		t.Errorf("GetClient = %+v, want %+v", got, c)
	}
	six := []string{"https://a.example/1", "https://a.example/2", "https://a.example/3", "https://a.example/4", "https://a.example/5", "https://a.example/6"}
	if _, err := s.RegisterClient(ctx, "five", six[:5]); err != nil {
		t.Fatalf("five redirect URIs: %v", err)
	}
	if _, err := s.RegisterClient(ctx, "long", []string{"https://a.example/" + strings.Repeat("a", 512-len("https://a.example/"))}); err != nil {
		t.Fatalf("a 512-byte redirect URI: %v", err)
	}
	for _, bad := range [][]string{nil, {"relative/cb"}, {"https://x.example/cb#frag"}, {""}, six, {"https://a.example/" + strings.Repeat("a", 513-len("https://a.example/"))}} {
		_, err := s.RegisterClient(ctx, "x", bad)
		wantErr(t, err, store.ErrInvalid)
	}
	if err := s.DeleteClient(ctx, c.ClientID); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetClient(ctx, c.ClientID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteClient(ctx, c.ClientID), store.ErrNotFound)
}

func testSecretsNeverStored(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	g := f.consent(t, s, "cli_x", "documents:read")
	lone := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
	c, _ := newCode(t, s, "documents:read")
	access, refresh, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	access2, refresh2, hashed2 := pair(t)
	if err := s.RotateRefreshTokenHash(ctx, store.HashToken(refresh), hashed2...); err != nil {
		t.Fatal(err)
	}
	legacy := try(s.IssueLegacyToken(ctx, f.project.ID, []string{"memory"})).must(t)
	secrets := []string{lone.Secret, access, refresh, access2, refresh2, legacy.Secret}

	dump := dumpTables(t, s)
	for _, secret := range secrets {
		// The random part alone must not appear either.
		body := secret[len(store.AccessTokenPrefix):]
		if strings.Contains(dump, body) {
			t.Errorf("secret %s…: stored in the clear", secret[:12])
		}
		if !strings.Contains(dump, store.HashToken(secret)) {
			t.Errorf("secret %s…: its hash is not stored", secret[:12])
		}
	}
}

// dumpTables renders every row of every table as text.
func dumpTables(t *testing.T, s store.Store) string {
	t.Helper()
	ctx := context.Background()
	db := store.RawDB(s)
	query := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if isPostgres(s) {
		query = `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`
	}
	tables := try(func() ([]string, error) {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return nil, err
			}
			out = append(out, name)
		}
		return out, rows.Err()
	}()).must(t)
	if !slices.Contains(tables, "oauth_tokens") || !slices.Contains(tables, "legacy_project_tokens") {
		t.Fatalf("tables = %q", tables)
	}
	var b strings.Builder
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%v\t", v)
			}
			b.WriteByte('\n')
		}
		rows.Close()
	}
	return b.String()
}

// TestProbeWrite: the readiness write probe rewrites its row on a writable
// database and fails on one that cannot write (here SQLite opened
// read-only under it), which a Ping does not notice.
func TestProbeWrite(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(t.Context(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ProbeWrite(t.Context()); err != nil {
		t.Fatalf("writable store: %v", err)
	}
	st.Close()
	ro, err := store.Open(t.Context(), "file:"+filepath.Join(dir, "agent-gateway.db")+"?mode=ro", dir)
	if err != nil {
		t.Skipf("read-only open refused at start: %v", err)
	}
	defer ro.Close()
	if err := ro.Ping(t.Context()); err != nil {
		t.Fatalf("read-only ping: %v", err)
	}
	if err := ro.ProbeWrite(t.Context()); err == nil {
		t.Fatal("the write probe passed on a read-only database")
	}
	if s := ro.PoolStats(); s.MaxOpenConnections == 0 && s.OpenConnections == 0 {
		t.Fatalf("pool stats empty: %+v", s)
	}
}
