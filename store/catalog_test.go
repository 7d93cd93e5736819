package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

var catalogSuite = []struct {
	name string
	run  func(t *testing.T, s store.Store)
}{
	{"instruction sources", testInstructionSources},
	{"account core and mode", testAccountLayers},
	{"profiles and their layers", testProfiles},
	{"catalog tenant rules in SQL", testCatalogConstraintsInSQL},
	{"plan order, missing layers and tenancy", testCatalogPlan},
	{"every layer but role instructions is reported missing", testMissingLayers},
	{"workflow store re-checks the plan", testCreateWorkflow},
	{"dispatch racing a repository revocation", testWorkflowRacesRevocation},
	{"workflow purge", testWorkflowPurge},
	{"concurrent workflow purges delete each row once", testConcurrentWorkflowPurges},
	{"workflow purge lock is its own", testWorkflowPurgeLock},
}

func TestCatalogStore(t *testing.T) {
	for _, tc := range catalogSuite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.Each(t, tc.run)
		})
	}
}

// catalogFixture is an account with two projects, an account repository
// and instruction sources for core, two modes and two role layers, and an
// instruction-role document source in each project.
type catalogFixture struct {
	account                                     store.Account
	projectA, projectB                          store.Project
	repo                                        store.AccountRepository
	core, worker, verifier, role, skill, skill2 store.InstructionSource
	docA, docB                                  store.DocumentSource
}

func newCatalogFixture(t *testing.T, s store.Store) catalogFixture {
	t.Helper()
	ctx := context.Background()
	var f catalogFixture
	f.account = try(s.CreateAccount(ctx, unique("account"))).must(t)
	f.projectA = try(s.CreateProject(ctx, f.account.ID, "a")).must(t)
	f.projectB = try(s.CreateProject(ctx, f.account.ID, "b")).must(t)
	f.repo = try(s.LinkAccountRepository(ctx, f.account.ID, "acme", "agents", 9)).must(t)
	add := func(path string) store.InstructionSource {
		return try(s.AddInstructionSource(ctx, store.NewInstructionSource{
			AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: path, CommitSHA: sha1,
		})).must(t)
	}
	f.core, f.worker, f.verifier = add("docs/agents/core.md"), add("docs/agents/worker.md"), add("docs/agents/verifier.md")
	f.role, f.skill, f.skill2 = add("docs/agents/roles/dev.md"), add("docs/agents/skills/go.md"), add("docs/agents/skills/sql.md")
	for _, p := range []*store.Project{&f.projectA, &f.projectB} {
		r := try(s.LinkRepository(ctx, p.ID, "acme", "app", 9)).must(t)
		d := try(s.AddDocumentSource(ctx, store.NewDocumentSource{
			ProjectID: p.ID, RepositoryID: r.ID, Role: store.RoleInstruction, Path: "AGENTS.md", TrackingRef: "main",
		})).must(t)
		if p == &f.projectA {
			f.docA = d
		} else {
			f.docB = d
		}
	}
	return f
}

func testInstructionSources(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	other := try(s.CreateAccount(ctx, unique("other"))).must(t)
	for _, tc := range []struct {
		name string
		n    store.NewInstructionSource
		want error
	}{
		{"outside docs/agents", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/core.md", CommitSHA: sha1}, store.ErrInvalid},
		{"prefix look-alike", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agentsx/core.md", CommitSHA: sha1}, store.ErrInvalid},
		{"the directory itself", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents", CommitSHA: sha1}, store.ErrInvalid},
		{"traversal", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents/../secrets.md", CommitSHA: sha1}, store.ErrInvalid},
		{"neither pin nor branch", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents/x.md"}, store.ErrInvalid},
		{"both", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents/x.md", CommitSHA: sha1, TrackingRef: "main"}, store.ErrInvalid},
		{"a tag ref", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents/x.md", TrackingRef: "refs/tags/v1"}, store.ErrInvalid},
		{"another account's repository", store.NewInstructionSource{AccountID: other.ID, RepositoryID: f.repo.ID, Path: "docs/agents/x.md", CommitSHA: sha1}, store.ErrNotFound},
		{"duplicate", store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents/core.md", CommitSHA: sha1}, store.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AddInstructionSource(ctx, tc.n)
			wantErr(t, err, tc.want)
		})
	}
	tracking := try(s.AddInstructionSource(ctx, store.NewInstructionSource{
		AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents/x.md", TrackingRef: "release/v2",
	})).must(t)
	if tracking.CommitSHA != "" || tracking.TrackingRef != "release/v2" || !tracking.Active() {
		t.Fatalf("tracking source = %+v", tracking)
	}
	if n := len(try(s.ListInstructionSources(ctx, f.account.ID, false)).must(t)); n != 7 {
		t.Fatalf("%d active sources, want 7", n)
	}
	if n := len(try(s.ListInstructionSources(ctx, other.ID, true)).must(t)); n != 0 {
		t.Fatalf("another account lists %d sources", n)
	}
	// Revoking the repository revokes its sources and refuses new ones.
	try(s.RevokeAccountRepository(ctx, f.account.ID, f.repo.ID)).must(t)
	if n := len(try(s.ListInstructionSources(ctx, f.account.ID, false)).must(t)); n != 0 {
		t.Fatalf("%d sources active after revoking the repository", n)
	}
	for _, src := range try(s.ListInstructionSources(ctx, f.account.ID, true)).must(t) {
		if src.RevokedAt == nil {
			t.Fatalf("source %s not revoked with its repository", src.ID)
		}
	}
	_, err := s.AddInstructionSource(ctx, store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: f.repo.ID, Path: "docs/agents/y.md", CommitSHA: sha1})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.RevokeAccountRepository(ctx, other.ID, f.repo.ID)
	wantErr(t, err, store.ErrNotFound)
}

func testAccountLayers(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	other := try(s.CreateAccount(ctx, unique("other"))).must(t)
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "", f.core.ID)).must(t)
	ls := try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", f.worker.ID)).must(t)
	if len(ls) != 2 || ls[0].Layer != "core" || ls[0].SourceID != f.core.ID || ls[1].Mode != "worker" || ls[1].SourceID != f.worker.ID {
		t.Fatalf("layers = %+v", ls)
	}
	// Setting again replaces; an empty source clears.
	ls = try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", f.verifier.ID)).must(t)
	if len(ls) != 2 || ls[1].SourceID != f.verifier.ID {
		t.Fatalf("after replacing: %+v", ls)
	}
	ls = try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", "")).must(t)
	if len(ls) != 1 {
		t.Fatalf("after clearing: %+v", ls)
	}
	_, err := s.SetAccountLayer(ctx, other.ID, store.LayerCore, "", f.core.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "worker", f.core.ID)
	wantErr(t, err, store.ErrInvalid)
	_, err = s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "Worker", f.core.ID)
	wantErr(t, err, store.ErrInvalid)
	_, err = s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "verifier", f.docA.ID)
	wantErr(t, err, store.ErrNotFound)
	try(s.RevokeInstructionSource(ctx, f.account.ID, f.skill.ID)).must(t)
	_, err = s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "verifier", f.skill.ID)
	wantErr(t, err, store.ErrInvalid)
}

func testProfiles(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	other := try(s.CreateAccount(ctx, unique("other"))).must(t)
	otherRepo := try(s.LinkAccountRepository(ctx, other.ID, "acme", "agents", 9)).must(t)
	foreign := try(s.AddInstructionSource(ctx, store.NewInstructionSource{
		AccountID: other.ID, RepositoryID: otherRepo.ID, Path: "docs/agents/core.md", CommitSHA: sha1,
	})).must(t)
	p := try(s.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: f.projectA.ID, Name: "developer"})).must(t)
	if p.AccountID != f.account.ID || p.Mode != store.DefaultMode || !strings.HasPrefix(p.ID, "prf_") {
		t.Fatalf("profile = %+v", p)
	}
	acc := try(s.CreateProfile(ctx, store.NewCatalogProfile{AccountID: f.account.ID, Name: "developer", Mode: "verifier"})).must(t)
	_, err := s.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: f.projectA.ID, Name: "developer"})
	wantErr(t, err, store.ErrConflict)
	_, err = s.CreateProfile(ctx, store.NewCatalogProfile{AccountID: other.ID, ProjectID: f.projectA.ID, Name: "x"})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.CreateProfile(ctx, store.NewCatalogProfile{Name: "x"})
	wantErr(t, err, store.ErrInvalid)

	for _, tc := range []struct {
		name    string
		profile string
		layer   string
		ids     []string
		want    error
	}{
		{"unknown layer", p.ID, "core", []string{f.core.ID}, store.ErrInvalid},
		{"two sources in a single layer", p.ID, store.LayerSoul, []string{f.role.ID, f.skill.ID}, store.ErrInvalid},
		{"a source twice", p.ID, store.LayerSkills, []string{f.skill.ID, f.skill.ID}, store.ErrInvalid},
		{"another project's document source", p.ID, store.LayerMethodology, []string{f.docB.ID}, store.ErrNotFound},
		{"a document source in an account profile", acc.ID, store.LayerMethodology, []string{f.docA.ID}, store.ErrNotFound},
		{"an unknown ID", p.ID, store.LayerMethodology, []string{"ins_nope"}, store.ErrNotFound},
		{"another account's source", p.ID, store.LayerMethodology, []string{foreign.ID}, store.ErrNotFound},
		{"not a source ID", p.ID, store.LayerMethodology, []string{"gibberish"}, store.ErrNotFound},
		{"an unknown profile", "prf_nope", store.LayerMethodology, []string{f.role.ID}, store.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.SetProfileLayer(ctx, tc.profile, tc.layer, tc.ids)
			wantErr(t, err, tc.want)
		})
	}
	// A runtime-role document source is not an instruction.
	r := try(s.FindRepository(ctx, f.projectA.ID, "acme", "app")).must(t)
	rt := try(s.AddDocumentSource(ctx, store.NewDocumentSource{ProjectID: f.projectA.ID, RepositoryID: r.ID, Role: "runtime", Path: "RUN.md", CommitSHA: sha1})).must(t)
	_, err = s.SetProfileLayer(ctx, p.ID, store.LayerMethodology, []string{rt.ID})
	wantErr(t, err, store.ErrInvalid)

	try(s.SetProfileLayer(ctx, p.ID, store.LayerSkills, []string{f.skill2.ID, f.skill.ID})).must(t)
	try(s.SetProfileLayer(ctx, p.ID, store.LayerRoleResponsibilities, []string{f.role.ID})).must(t)
	got := try(s.SetProfileLayer(ctx, p.ID, store.LayerMethodology, []string{f.docA.ID})).must(t)
	want := []string{"role_responsibilities/1/" + f.role.ID, "methodology/1/" + f.docA.ID, "skills/1/" + f.skill2.ID, "skills/2/" + f.skill.ID}
	if g := layerKeys(got.Layers); strings.Join(g, " ") != strings.Join(want, " ") {
		t.Fatalf("layers = %v, want %v", g, want)
	}
	got = try(s.SetProfileLayer(ctx, p.ID, store.LayerSkills, nil)).must(t)
	if len(got.Layers) != 2 {
		t.Fatalf("after clearing skills: %v", layerKeys(got.Layers))
	}
	ps := try(s.ListProfiles(ctx, "", f.projectA.ID)).must(t)
	if len(ps) != 2 || ps[0].ID != p.ID || ps[1].ID != acc.ID {
		t.Fatalf("project A sees %d profiles", len(ps))
	}
	if ps := try(s.ListProfiles(ctx, "", f.projectB.ID)).must(t); len(ps) != 1 || ps[0].ID != acc.ID {
		t.Fatalf("project B sees %+v", ps)
	}
	if ps := try(s.ListProfiles(ctx, other.ID, "")).must(t); len(ps) != 0 {
		t.Fatalf("another account sees %d profiles", len(ps))
	}
}

func layerKeys(ls []store.PlanLayer) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Layer+"/"+string(rune('0'+l.Position))+"/"+l.Source.ID)
	}
	return out
}

// testCatalogConstraintsInSQL writes rows the store methods refuse straight
// into the tables: the schema refuses them too.
func testCatalogConstraintsInSQL(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	p := try(s.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: f.projectA.ID, Name: "dev"})).must(t)
	acc := try(s.CreateProfile(ctx, store.NewCatalogProfile{AccountID: f.account.ID, Name: "dev"})).must(t)
	other := try(s.CreateAccount(ctx, unique("other"))).must(t)
	db := store.RawDB(s)
	now := timeLiteral(s, "2026-01-01T00:00:00.000000Z")
	for _, tc := range []struct{ name, sql string }{
		{"another project's document source, under its project", `INSERT INTO catalog_profile_layers VALUES ('` + p.ID + `', '` + f.account.ID + `', '` + f.projectB.ID + `', 'soul', 1, NULL, '` + f.docB.ID + `')`},
		{"another project's document source, under the profile's project", `INSERT INTO catalog_profile_layers VALUES ('` + p.ID + `', '` + f.account.ID + `', '` + f.projectA.ID + `', 'soul', 1, NULL, '` + f.docB.ID + `')`},
		{"a document source in an account profile", `INSERT INTO catalog_profile_layers VALUES ('` + acc.ID + `', '` + f.account.ID + `', NULL, 'soul', 1, NULL, '` + f.docA.ID + `')`},
		{"another account's profile row", `INSERT INTO catalog_profile_layers VALUES ('` + p.ID + `', '` + other.ID + `', NULL, 'soul', 1, '` + f.core.ID + `', NULL)`},
		{"both kinds of source", `INSERT INTO catalog_profile_layers VALUES ('` + p.ID + `', '` + f.account.ID + `', '` + f.projectA.ID + `', 'soul', 1, '` + f.core.ID + `', '` + f.docA.ID + `')`},
		{"core as a profile layer", `INSERT INTO catalog_profile_layers VALUES ('` + p.ID + `', '` + f.account.ID + `', NULL, 'core', 1, '` + f.core.ID + `', NULL)`},
		{"instruction source outside docs/agents", `INSERT INTO instruction_sources (id, account_id, repository_id, role, path, commit_sha, created_at) VALUES ('ins_x', '` + f.account.ID + `', '` + f.repo.ID + `', 'instruction', 'docs/x.md', '` + sha1 + `', ` + now + `)`},
		{"instruction source of another role", `INSERT INTO instruction_sources (id, account_id, repository_id, role, path, commit_sha, created_at) VALUES ('ins_y', '` + f.account.ID + `', '` + f.repo.ID + `', 'runtime', 'docs/agents/x.md', '` + sha1 + `', ` + now + `)`},
		{"instruction source on another account's repository", `INSERT INTO instruction_sources (id, account_id, repository_id, role, path, commit_sha, created_at) VALUES ('ins_z', '` + other.ID + `', '` + f.repo.ID + `', 'instruction', 'docs/agents/x.md', '` + sha1 + `', ` + now + `)`},
		{"core naming another account's source", `INSERT INTO account_instruction_layers VALUES ('` + other.ID + `', 'core', '', '` + f.core.ID + `', ` + now + `)`},
		{"core with a mode name", `INSERT INTO account_instruction_layers VALUES ('` + f.account.ID + `', 'core', 'worker', '` + f.core.ID + `', ` + now + `)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := db.ExecContext(ctx, tc.sql); err == nil {
				t.Fatal("the schema accepted the row")
			}
		})
	}
}

func testCatalogPlan(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	p := try(s.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: f.projectA.ID, Name: "dev"})).must(t)
	try(s.SetProfileLayer(ctx, p.ID, store.LayerSkills, []string{f.skill.ID, f.skill2.ID})).must(t)
	try(s.SetProfileLayer(ctx, p.ID, store.LayerSoul, []string{f.docA.ID})).must(t)
	try(s.SetProfileLayer(ctx, p.ID, store.LayerRoleResponsibilities, []string{f.role.ID})).must(t)

	plan := try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)
	if strings.Join(plan.Missing, " ") != "core mode methodology" || len(plan.Layers) != 4 {
		t.Fatalf("plan without core, mode and methodology: missing %v, layers %v", plan.Missing, layerKeys(plan.Layers))
	}
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "", f.core.ID)).must(t)
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "verifier", f.verifier.ID)).must(t)
	plan = try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)
	if strings.Join(plan.Missing, " ") != "mode methodology" {
		t.Fatalf("only the worker mode and methodology are missing; got %v", plan.Missing)
	}
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", f.worker.ID)).must(t)
	plan = try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)
	want := []string{"core/1/" + f.core.ID, "mode/1/" + f.worker.ID, "role_responsibilities/1/" + f.role.ID,
		"soul/1/" + f.docA.ID, "skills/1/" + f.skill.ID, "skills/2/" + f.skill2.ID}
	if g := layerKeys(plan.Layers); strings.Join(g, " ") != strings.Join(want, " ") || strings.Join(plan.Missing, " ") != "methodology" {
		t.Fatalf("plan = %v missing %v, want %v missing [methodology]", g, plan.Missing, want)
	}
	if l := plan.Layers[3].Source; l.Scope != store.ScopeProject || l.TrackingRef != "main" || l.Owner != "acme" || l.InstallationID != 9 {
		t.Fatalf("project layer source = %+v", l)
	}
	// Project B cannot use project A's profile; another account's project
	// cannot use this account's profiles.
	_, err := s.CatalogPlan(ctx, f.projectB.ID, p.ID)
	wantErr(t, err, store.ErrNotFound)
	stranger := try(s.CreateProject(ctx, "", unique("stranger"))).must(t)
	acc := try(s.CreateProfile(ctx, store.NewCatalogProfile{AccountID: f.account.ID, Name: "acc"})).must(t)
	try(s.CatalogPlan(ctx, f.projectB.ID, acc.ID)).must(t)
	_, err = s.CatalogPlan(ctx, stranger.ID, acc.ID)
	wantErr(t, err, store.ErrNotFound)
}

// testMissingLayers: only role instructions are optional
// (docs/architecture.md#instruction-catalog-contract). A
// plan reports, in assembly order, every other layer it lacks except role
// responsibilities (without which it is not dispatched at all): the
// account's core and mode, and the profile's methodology, soul and skills;
// the admin's view of the profile says the same, and a stored workflow
// keeps the report.
func testMissingLayers(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	p := try(s.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: f.projectA.ID, Name: "dev"})).must(t)
	try(s.SetProfileLayer(ctx, p.ID, store.LayerRoleResponsibilities, []string{f.role.ID})).must(t)
	all := "core mode methodology soul skills"
	for _, c := range []struct {
		name    string
		set     func()
		missing string
	}{
		{"role responsibilities only", func() {}, all},
		{"role instructions are optional", func() {
			try(s.SetProfileLayer(ctx, p.ID, store.LayerRoleInstructions, []string{f.skill2.ID})).must(t)
		}, all},
		{"skills", func() {
			try(s.SetProfileLayer(ctx, p.ID, store.LayerSkills, []string{f.skill.ID})).must(t)
		}, "core mode methodology soul"},
		{"core", func() {
			try(s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "", f.core.ID)).must(t)
		}, "mode methodology soul"},
		{"soul", func() {
			try(s.SetProfileLayer(ctx, p.ID, store.LayerSoul, []string{f.docA.ID})).must(t)
		}, "mode methodology"},
		{"methodology", func() {
			try(s.SetProfileLayer(ctx, p.ID, store.LayerMethodology, []string{f.verifier.ID})).must(t)
		}, "mode"},
		{"mode", func() {
			try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", f.worker.ID)).must(t)
		}, ""},
		{"soul removed again", func() {
			try(s.SetProfileLayer(ctx, p.ID, store.LayerSoul, nil)).must(t)
		}, "soul"},
	} {
		c.set()
		plan := try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)
		if got := strings.Join(plan.Missing, " "); got != c.missing {
			t.Fatalf("%s: plan missing %q, want %q (layers %v)", c.name, got, c.missing, layerKeys(plan.Layers))
		}
		prof := try(s.GetProfile(ctx, p.ID)).must(t)
		account := try(s.ListAccountLayers(ctx, f.account.ID)).must(t)
		if got := strings.Join(prof.MissingLayers(account), " "); got != c.missing {
			t.Fatalf("%s: profile view missing %q, want %q", c.name, got, c.missing)
		}
		w := try(s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: "grt_1", Subject: "alice"})).must(t)
		if got := strings.Join(try(s.GetWorkflow(ctx, f.projectA.ID, w.ID)).must(t).LayersMissing, " "); got != c.missing {
			t.Fatalf("%s: stored workflow missing %q, want %q", c.name, got, c.missing)
		}
	}
}

func frozen(plan store.CatalogPlan) []store.FrozenLayer {
	var out []store.FrozenLayer
	for _, l := range plan.Layers {
		out = append(out, store.FrozenLayer{Layer: l.Layer, Position: l.Position, Source: l.Source,
			CommitSHA: sha2, SHA256: strings.Repeat("ab", 32), Bytes: 10, Chars: 9})
	}
	return out
}

// devProfile configures project A's profile "dev" (role responsibilities
// and soul) and the account's core and worker mode, and returns the
// profile and its plan: four layers.
func devProfile(t *testing.T, s store.Store, f catalogFixture) (store.CatalogProfile, store.CatalogPlan) {
	t.Helper()
	ctx := context.Background()
	p := try(s.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: f.projectA.ID, Name: "dev"})).must(t)
	try(s.SetProfileLayer(ctx, p.ID, store.LayerRoleResponsibilities, []string{f.role.ID})).must(t)
	try(s.SetProfileLayer(ctx, p.ID, store.LayerSoul, []string{f.docA.ID})).must(t)
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "", f.core.ID)).must(t)
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", f.worker.ID)).must(t)
	return p, try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)
}

func testCreateWorkflow(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	p, plan := devProfile(t, s, f)
	w := try(s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: "grt_1", Subject: "alice"})).must(t)
	if w.SourceBytes != 40 || strings.Join(w.LayersMissing, " ") != "methodology skills" || !strings.HasPrefix(w.ID, "wfl_") {
		t.Fatalf("workflow = %+v", w)
	}
	got := try(s.GetWorkflow(ctx, f.projectA.ID, w.ID)).must(t)
	if len(got.Layers) != 4 || got.Layers[3].Source.TrackingRef != "main" || got.Layers[3].CommitSHA != sha2 ||
		got.Layers[0].Source.InstallationID != 9 || got.Layers[0].Source.Path != "docs/agents/core.md" || got.Subject != "alice" {
		t.Fatalf("stored workflow = %+v", got)
	}
	_, err := s.GetWorkflow(ctx, f.projectB.ID, w.ID)
	wantErr(t, err, store.ErrNotFound)
	if ws := try(s.ListWorkflows(ctx, f.projectA.ID, 10)).must(t); len(ws) != 1 || ws[0].ID != w.ID {
		t.Fatalf("list = %+v", ws)
	}

	// A frozen layer list that does not answer the plan is refused.
	bad := frozen(plan)
	bad[0], bad[1] = bad[1], bad[0]
	_, err = s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: bad, ConsentID: "grt_1", Subject: "alice"})
	wantErr(t, err, store.ErrInvalid)

	// Reconfiguration between plan and store: refused, nothing stored.
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", f.verifier.ID)).must(t)
	_, err = s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: "grt_1", Subject: "alice"})
	wantErr(t, err, store.ErrCatalogChanged)
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerMode, "worker", f.worker.ID)).must(t)
	plan = try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "", "")).must(t)
	_, err = s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: "grt_1", Subject: "alice"})
	wantErr(t, err, store.ErrCatalogChanged)
	try(s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "", f.core.ID)).must(t)

	// Revocation between plan and store: of a source, of a project
	// repository (which revokes its sources).
	plan = try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)
	try(s.RevokeInstructionSource(ctx, f.account.ID, f.core.ID)).must(t)
	_, err = s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: "grt_1", Subject: "alice"})
	var ce *store.CatalogCheckError
	if !errors.Is(err, store.ErrRevoked) || !errors.As(err, &ce) || ce.Layer != store.LayerCore || ce.SourceID != f.core.ID {
		t.Fatalf("after revoking the core: %v", err)
	}
	got = try(s.GetWorkflow(ctx, f.projectA.ID, w.ID)).must(t)
	if got.Layers[0].Source.Active() || !got.Layers[1].Source.Active() {
		t.Fatal("the stored workflow does not show the core's revocation")
	}
	if ws := try(s.ListWorkflows(ctx, f.projectA.ID, 10)).must(t); len(ws) != 1 {
		t.Fatalf("%d workflows stored, want only the first", len(ws))
	}
}

// testWorkflowRacesRevocation stores workflows while their account
// repository is being revoked: each dispatch either commits first or is
// refused as revoked, and the revocation always succeeds. On PostgreSQL
// this found a deadlock when the re-check held a source before its
// repository, the reverse of the revocation's order.
func testWorkflowRacesRevocation(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	p := try(s.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: f.projectA.ID, Name: "dev"})).must(t)
	stored, refused := 0, 0
	for i := range 12 {
		repo := try(s.LinkAccountRepository(ctx, f.account.ID, "acme", fmt.Sprintf("agents-%d", i), 9)).must(t)
		add := func(path string) store.InstructionSource {
			return try(s.AddInstructionSource(ctx, store.NewInstructionSource{AccountID: f.account.ID, RepositoryID: repo.ID, Path: path, CommitSHA: sha1})).must(t)
		}
		role, core := add("docs/agents/role.md"), add("docs/agents/core.md")
		try(s.SetProfileLayer(ctx, p.ID, store.LayerRoleResponsibilities, []string{role.ID})).must(t)
		try(s.SetAccountLayer(ctx, f.account.ID, store.LayerCore, "", core.ID)).must(t)
		plan := try(s.CatalogPlan(ctx, f.projectA.ID, p.ID)).must(t)

		var wg sync.WaitGroup
		var werr, rerr error
		wg.Go(func() {
			_, werr = s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: "grt_1", Subject: "alice"})
		})
		wg.Go(func() { _, rerr = s.RevokeAccountRepository(ctx, f.account.ID, repo.ID) })
		wg.Wait()
		if rerr != nil {
			t.Fatalf("round %d: revocation failed: %v", i, rerr)
		}
		switch {
		case werr == nil:
			stored++
		case errors.Is(werr, store.ErrRevoked):
			refused++
		default:
			t.Fatalf("round %d: dispatch failed with %v, want success or ErrRevoked", i, werr)
		}
	}
	t.Logf("%d stored before the revocation, %d refused after it", stored, refused)
}
