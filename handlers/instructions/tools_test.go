package instructions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/upstream/github"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

var (
	pinned = strings.Repeat("a1", 20)
	headV1 = strings.Repeat("b2", 20)
	headV2 = strings.Repeat("c3", 20)
)

// fakeStore serves one plan per profile for project prj_a and stores
// workflows; recheck, when set, is what CreateWorkflow's re-check finds.
type fakeStore struct {
	plans     map[string]store.CatalogPlan
	workflows map[string]store.Workflow
	recheck   error
}

func (f *fakeStore) ListProfiles(_ context.Context, _, projectID string) ([]store.CatalogProfile, error) {
	var out []store.CatalogProfile
	for _, p := range f.plans {
		if p.ProjectID == projectID {
			out = append(out, p.Profile)
		}
	}
	return out, nil
}

func (f *fakeStore) CatalogPlan(_ context.Context, projectID, profileID string) (store.CatalogPlan, error) {
	p, ok := f.plans[profileID]
	if !ok || p.ProjectID != projectID {
		return store.CatalogPlan{}, fmt.Errorf("%w: profile", store.ErrNotFound)
	}
	return p, nil
}

func (f *fakeStore) CreateWorkflow(_ context.Context, n store.NewWorkflow) (store.Workflow, error) {
	if f.recheck != nil {
		return store.Workflow{}, f.recheck
	}
	w := store.Workflow{
		ID: fmt.Sprintf("wfl_%d", len(f.workflows)+1), ProjectID: n.Plan.ProjectID, ProfileID: n.Plan.Profile.ID,
		ProfileName: n.Plan.Profile.Name, Mode: n.Plan.Profile.Mode, LayersMissing: n.Plan.Missing,
		ConsentID: n.ConsentID, Subject: n.Subject, CreatedAt: time.Now(), Layers: n.Layers,
	}
	f.workflows[w.ID] = w
	return w, nil
}

func (f *fakeStore) GetWorkflow(_ context.Context, projectID, id string) (store.Workflow, error) {
	w, ok := f.workflows[id]
	if !ok || w.ProjectID != projectID {
		return store.Workflow{}, fmt.Errorf("%w: workflow", store.ErrNotFound)
	}
	return w, nil
}

// fakeGitHub serves files by path@commit and branch heads by name.
type fakeGitHub struct {
	files        map[string][]byte // "path@commit"
	heads        map[string]string
	fileReads    int
	branchReads  int
	failBranches bool
}

func (g *fakeGitHub) GetFile(_ context.Context, r github.FileRequest) (*github.File, error) {
	g.fileReads++
	c, ok := g.files[r.Path+"@"+r.Commit]
	if !ok {
		return nil, toolerr.New(toolerr.ProviderNotFound, "no such file")
	}
	return &github.File{Path: r.Path, Content: c}, nil
}

func (g *fakeGitHub) BranchHead(_ context.Context, r github.BranchRequest) (string, error) {
	g.branchReads++
	h, ok := g.heads[r.Branch]
	if !ok || g.failBranches {
		return "", toolerr.New(toolerr.ProviderNotFound, "no such branch")
	}
	return h, nil
}

func src(scope, id, path string, tracking bool) store.CatalogSource {
	s := store.CatalogSource{Scope: scope, ID: id, RepositoryID: "arp_1", Owner: "acme", Name: "agents", InstallationID: 9, Path: path}
	if tracking {
		s.TrackingRef = "main"
	} else {
		s.CommitSHA = pinned
	}
	return s
}

type fixture struct {
	st    *fakeStore
	gh    *fakeGitHub
	tools map[string]toolset.Tool
}

// newFixture: profile prf_dev (mode worker) of prj_a with core (pinned),
// mode (tracking main), role responsibilities (pinned), soul (a tracking
// project source) and two skills.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	plan := store.CatalogPlan{
		ProjectID: "prj_a",
		Profile:   store.CatalogProfile{ID: "prf_dev", AccountID: "acc_1", ProjectID: "prj_a", Name: "developer", Mode: "worker"},
		Layers: []store.PlanLayer{
			{Layer: "core", Position: 1, Source: src("account", "ins_core", "docs/agents/core.md", false)},
			{Layer: "mode", Position: 1, Source: src("account", "ins_worker", "docs/agents/worker.md", true)},
			{Layer: "role_responsibilities", Position: 1, Source: src("account", "ins_role", "docs/agents/dev.md", false)},
			{Layer: "soul", Position: 1, Source: src("project", "src_soul", "SOUL.md", true)},
			{Layer: "skills", Position: 1, Source: src("account", "ins_s1", "docs/agents/s1.md", false)},
			{Layer: "skills", Position: 2, Source: src("account", "ins_s2", "docs/agents/s2.md", false)},
		},
	}
	f := &fixture{
		st: &fakeStore{plans: map[string]store.CatalogPlan{"prf_dev": plan}, workflows: map[string]store.Workflow{}},
		gh: &fakeGitHub{heads: map[string]string{"main": headV1}, files: map[string][]byte{
			"docs/agents/core.md@" + pinned:   []byte("Core rules.\n"),
			"docs/agents/worker.md@" + headV1: []byte("Work carefully.\n"),
			"docs/agents/worker.md@" + headV2: []byte("Work fast.\n"),
			"docs/agents/dev.md@" + pinned:    []byte("héllo wörld\n"),
			"SOUL.md@" + headV1:               []byte("Be kind."),
			"SOUL.md@" + headV2:               []byte("Be kinder."),
			"docs/agents/s1.md@" + pinned:     []byte("Skill: 😀 e\u0301\n"),
			"docs/agents/s2.md@" + pinned:     {},
		}},
		tools: map[string]toolset.Tool{},
	}
	for _, tool := range Tools(Options{Store: f.st, GitHub: f.gh}) {
		f.tools[tool.Name] = tool
	}
	return f
}

func grantCtx(project string, scopes ...string) context.Context {
	return middleware.WithPrincipal(context.Background(), &middleware.Principal{
		Kind: middleware.OAuthConsent, Key: "grant:grt_1", ConsentID: "grt_1", Subject: "alice", ProjectID: project,
		Scopes: scopes, ScopesKnown: true,
	})
}

var (
	reader     = grantCtx("prj_a", ReadScope.Name)
	dispatcher = grantCtx("prj_a", DispatchScope.Name)
)

func (f *fixture) call(ctx context.Context, tool string, args map[string]any) (map[string]any, *toolerr.Error) {
	raw, _ := json.Marshal(args)
	out, err := f.tools[tool].Handle(ctx, raw)
	if err != nil {
		return nil, toolerr.As(err)
	}
	b, _ := json.Marshal(out)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m, nil
}

// wantLayer is a layer's metadata computed by hand (sha256sum, wc -c and
// counting code points on paper).
type wantLayer struct {
	layer, provenance, commit, sha string
	bytes, chars, tokens, position int
}

var handComputed = []wantLayer{
	{"core", "commit:" + pinned, pinned, "194738bf7b9d17a6e10c3cb585f2280ad93c9abb9da3c2a01f8229af08b6927b", 12, 12, 3, 1},
	{"mode", "tracking:main", headV1, "eb162efc3b1fed1e2fe58ce02b920b02dc138bd830387670b4adaa277932c8bd", 16, 16, 4, 1},
	// "héllo wörld\n": two 2-byte letters.
	{"role_responsibilities", "commit:" + pinned, pinned, "3828eeee974aa7486e7acc258e5c73a0115e168444d6688deb8d5d1306d1f57d", 14, 12, 3, 1},
	{"soul", "tracking:main", headV1, "5499befb38dbf3fcc08107141cb2a9e7f42a6aae403361dc3601b8296d7967ea", 8, 8, 2, 1},
	// "Skill: 😀 e\u0301\n": a 4-byte emoji is one code point; e and its
	// combining accent are two.
	{"skills", "commit:" + pinned, pinned, "3b2e1a79edb5e103bb9b35ffb77dce671a33e70577913aba5508744f5bf1cf0e", 16, 12, 3, 1},
	{"skills", "commit:" + pinned, pinned, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0, 0, 0, 2},
}

func checkLayers(t *testing.T, got any, want []wantLayer) {
	t.Helper()
	layers := got.([]any)
	if len(layers) != len(want) {
		t.Fatalf("%d layers, want %d", len(layers), len(want))
	}
	for i, w := range want {
		l := layers[i].(map[string]any)
		if l["layer"] != w.layer || l["position"] != float64(w.position) || l["provenance"] != w.provenance || l["commit_sha"] != w.commit ||
			l["sha256"] != w.sha || l["bytes"] != float64(w.bytes) || l["chars"] != float64(w.chars) || l["est_tokens"] != float64(w.tokens) {
			t.Errorf("layer %d = %v, want %+v", i, l, w)
		}
	}
}

const wantInstructions = "## Core\n\nCore rules.\n" +
	"\n## Mode: worker\n\nWork carefully.\n" +
	"\n## Role responsibilities\n\nhéllo wörld\n" +
	"\n## Soul\n\nBe kind.\n" +
	"\n## Skills (1/2)\n\nSkill: 😀 e\u0301\n" +
	"\n## Skills (2/2)\n\n"

func TestDispatchLayerOrderAndMetadata(t *testing.T) {
	f := newFixture(t)
	out, err := f.call(dispatcher, "workflow_dispatch", map[string]any{"profile_id": "prf_dev"})
	if err != nil {
		t.Fatal(err)
	}
	checkLayers(t, out["layers"], handComputed)
	cat := out["catalog"].(map[string]any)
	if cat["source_bytes"] != float64(66) || cat["chars"] != float64(60) || cat["est_tokens"] != float64(15) ||
		cat["budget_bytes"] != float64(61440) || len(cat["layers_missing"].([]any)) != 0 {
		t.Errorf("catalog = %v", cat)
	}
	if out["instructions"] != wantInstructions {
		t.Errorf("instructions = %q\nwant           %q", out["instructions"], wantInstructions)
	}
	if l := out["layers"].([]any)[2].(map[string]any); l["text"] != "héllo wörld\n" || l["source_scope"] != "account" {
		t.Errorf("role layer = %v", l)
	}
	// One branch, read once for both tracking layers.
	if f.gh.branchReads != 1 || f.gh.fileReads != 6 {
		t.Errorf("%d branch reads, %d file reads; want 1 and 6", f.gh.branchReads, f.gh.fileReads)
	}
	if by := out["dispatched_by"].(map[string]any); by["grant_id"] != "grt_1" || by["subject"] != "alice" {
		t.Errorf("dispatched_by = %v", by)
	}

	// The compact view keeps the metadata, not the text.
	id := out["workflow_id"].(string)
	compact, err := f.call(reader, "workflow_get", map[string]any{"workflow_id": id})
	if err != nil {
		t.Fatal(err)
	}
	checkLayers(t, compact["layers"], handComputed)
	if _, ok := compact["instructions"]; ok {
		t.Error("compact view has instructions")
	}
	for _, l := range compact["layers"].([]any) {
		if _, ok := l.(map[string]any)["text"]; ok {
			t.Fatal("compact view has layer text")
		}
	}

	// The branch moves; a replay still reads the frozen commit.
	f.gh.heads["main"] = headV2
	replay, err := f.call(reader, "workflow_get", map[string]any{"workflow_id": id, "replay": true})
	if err != nil {
		t.Fatal(err)
	}
	checkLayers(t, replay["layers"], handComputed)
	if replay["instructions"] != wantInstructions || replay["replayed"] != true {
		t.Errorf("replay = %v", replay)
	}
	// A fresh assembly follows the branch.
	prof, err := f.call(reader, "catalog_profile_get", map[string]any{"profile_id": "prf_dev"})
	if err != nil {
		t.Fatal(err)
	}
	if l := prof["layers"].([]any)[1].(map[string]any); l["commit_sha"] != headV2 || l["bytes"] != float64(11) {
		t.Errorf("mode after the branch moved = %v", l)
	}
}

func TestMissingCoreAndModeKeepPreviousInstructions(t *testing.T) {
	for _, c := range []struct {
		name    string
		missing []string
	}{{"core", []string{"core"}}, {"mode", []string{"mode"}}, {"both", []string{"core", "mode"}}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			plan := f.st.plans["prf_dev"]
			var layers []store.PlanLayer
			var want []wantLayer
			for i, l := range plan.Layers {
				if !strings.Contains(strings.Join(c.missing, " "), l.Layer) {
					layers = append(layers, l)
					want = append(want, handComputed[i])
				}
			}
			plan.Layers, plan.Missing = layers, c.missing
			f.st.plans["prf_dev"] = plan
			out, err := f.call(dispatcher, "workflow_dispatch", map[string]any{"profile_id": "prf_dev"})
			if err != nil {
				t.Fatal(err)
			}
			checkLayers(t, out["layers"], want)
			if got := fmt.Sprint(out["catalog"].(map[string]any)["layers_missing"]); got != fmt.Sprint(c.missing) {
				t.Errorf("layers_missing = %v, want %v", got, c.missing)
			}
			if strings.Contains(out["instructions"].(string), "## Core") == (c.name != "mode") {
				t.Errorf("instructions = %q", out["instructions"])
			}
			list, err := f.call(reader, "catalog_profiles_list", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(list["profiles"].([]any)[0].(map[string]any)["catalog"].(map[string]any)["layers_missing"]); got != fmt.Sprint(c.missing) {
				t.Errorf("list layers_missing = %v", got)
			}
		})
	}
}

func TestBudgetBoundary(t *testing.T) {
	// Core and mode count: fill the budget with them plus the fixture's
	// other layers (38 bytes), then one byte more.
	for _, c := range []struct {
		name  string
		extra int
		fail  bool
	}{{"exactly 60 KiB", 0, false}, {"one byte over", 1, true}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			others := 14 + 8 + 16 + 0
			coreBytes := 30000
			modeBytes := BudgetBytes - others - coreBytes + c.extra
			f.gh.files["docs/agents/core.md@"+pinned] = []byte(strings.Repeat("c", coreBytes))
			// Multi-byte text: the budget counts bytes, not characters.
			mode := strings.Repeat("é", modeBytes/2) + strings.Repeat("m", modeBytes%2)
			f.gh.files["docs/agents/worker.md@"+headV1] = []byte(mode)
			out, err := f.call(dispatcher, "workflow_dispatch", map[string]any{"profile_id": "prf_dev"})
			if !c.fail {
				if err != nil || out["catalog"].(map[string]any)["source_bytes"] != float64(BudgetBytes) {
					t.Fatalf("at the budget: %v %v", err, out["catalog"])
				}
				return
			}
			if err == nil || err.Code != toolerr.CatalogBudgetExceeded {
				t.Fatalf("over the budget: %v", err)
			}
			if err.Details["source_bytes"] != BudgetBytes+1 || err.Details["budget_bytes"] != BudgetBytes ||
				!strings.Contains(err.Message, "Core docs/agents/core.md (30000 bytes)") || !strings.Contains(err.Message, "Mode docs/agents/worker.md") {
				t.Fatalf("error = %v %v", err.Message, err.Details)
			}
			if n := len(err.Details["layers"].([]map[string]any)); n != 6 {
				t.Fatalf("error names %d layers, want 6", n)
			}
			if len(f.st.workflows) != 0 {
				t.Fatal("a workflow over the budget was stored")
			}
		})
	}
}

func TestDispatchRefusals(t *testing.T) {
	revoked := time.Now()
	cases := []struct {
		name    string
		ctx     context.Context
		tool    string
		args    map[string]any
		prepare func(f *fixture)
		code    toolerr.Code
		layer   string
		reads   bool // whether GitHub may have been read
	}{
		{"read scope cannot dispatch", reader, "workflow_dispatch", nil, nil, toolerr.InsufficientScope, "", false},
		{"dispatch scope cannot list", dispatcher, "catalog_profiles_list", nil, nil, toolerr.InsufficientScope, "", false},
		{"another project's profile", grantCtx("prj_b", DispatchScope.Name), "workflow_dispatch", nil, nil, toolerr.NotFound, "", false},
		{"a revoked source", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			p := f.st.plans["prf_dev"]
			p.Layers[4].Source.RevokedAt = &revoked
		}, toolerr.SourceRevoked, "skills", false},
		{"a revoked repository link", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			p := f.st.plans["prf_dev"]
			p.Layers[0].Source.RepositoryRevokedAt = &revoked
		}, toolerr.SourceRevoked, "core", false},
		{"no role responsibilities", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			p := f.st.plans["prf_dev"]
			p.Layers = append(p.Layers[:2:2], p.Layers[3:]...)
			f.st.plans["prf_dev"] = p
		}, toolerr.ProfileIncomplete, "", false},
		{"an unreadable file", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			delete(f.gh.files, "docs/agents/s1.md@"+pinned)
		}, toolerr.ProviderNotFound, "skills", true},
		{"an unresolvable branch", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			f.gh.failBranches = true
		}, toolerr.ProviderNotFound, "mode", true},
		{"not UTF-8", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			f.gh.files["SOUL.md@"+headV1] = []byte("caf\xe9")
		}, toolerr.NotUTF8, "soul", true},
		{"revoked between assembly and store", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			f.st.recheck = &store.CatalogCheckError{Err: store.ErrRevoked, Layer: "core", SourceID: "ins_core"}
		}, toolerr.SourceRevoked, "core", true},
		{"reconfigured between assembly and store", dispatcher, "workflow_dispatch", nil, func(f *fixture) {
			f.st.recheck = &store.CatalogCheckError{Err: store.ErrCatalogChanged}
		}, toolerr.CatalogChanged, "", true},
		{"profile_get fails like dispatch", reader, "catalog_profile_get", nil, func(f *fixture) {
			f.gh.files["SOUL.md@"+headV1] = []byte("caf\xe9")
		}, toolerr.NotUTF8, "soul", true},
		{"a malformed profile ID", dispatcher, "workflow_dispatch", map[string]any{"profile_id": "../x"}, nil, toolerr.InvalidArguments, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.prepare != nil {
				c.prepare(f)
			}
			args := c.args
			if args == nil && c.tool != "catalog_profiles_list" {
				args = map[string]any{"profile_id": "prf_dev"}
			}
			_, err := f.call(c.ctx, c.tool, args)
			if err == nil || err.Code != c.code {
				t.Fatalf("error = %v, want %s", err, c.code)
			}
			if c.layer != "" && err.Details["layer"] != c.layer {
				t.Fatalf("error names layer %v, want %s", err.Details["layer"], c.layer)
			}
			if !c.reads && f.gh.fileReads+f.gh.branchReads != 0 {
				t.Fatalf("GitHub was read %d times before the refusal", f.gh.fileReads+f.gh.branchReads)
			}
			if len(f.st.workflows) != 0 {
				t.Fatal("a refused dispatch stored a workflow")
			}
		})
	}
}

func TestReplayRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(f *fixture, w *store.Workflow)
		code   toolerr.Code
	}{
		{"revoked since dispatch", func(_ *fixture, w *store.Workflow) {
			now := time.Now()
			w.Layers[3].Source.RevokedAt = &now
		}, toolerr.SourceRevoked},
		{"bytes differ at the frozen commit", func(f *fixture, _ *store.Workflow) {
			f.gh.files["SOUL.md@"+headV1] = []byte("Be kind!")
		}, toolerr.ReplayMismatch},
		{"file gone", func(f *fixture, _ *store.Workflow) {
			delete(f.gh.files, "SOUL.md@"+headV1)
		}, toolerr.ProviderNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			out, err := f.call(dispatcher, "workflow_dispatch", map[string]any{"profile_id": "prf_dev"})
			if err != nil {
				t.Fatal(err)
			}
			id := out["workflow_id"].(string)
			w := f.st.workflows[id]
			w.Layers = append([]store.FrozenLayer(nil), w.Layers...)
			c.change(f, &w)
			f.st.workflows[id] = w
			_, terr := f.call(reader, "workflow_get", map[string]any{"workflow_id": id, "replay": true})
			if terr == nil || terr.Code != c.code || terr.Details["layer"] != "soul" {
				t.Fatalf("error = %v %v, want %s on soul", terr, terr.Details, c.code)
			}
			// The compact view needs no read and stays available.
			if _, terr := f.call(reader, "workflow_get", map[string]any{"workflow_id": id}); terr != nil {
				t.Fatal(terr)
			}
			if _, terr := f.call(grantCtx("prj_b", ReadScope.Name), "workflow_get", map[string]any{"workflow_id": id}); terr == nil || terr.Code != toolerr.NotFound {
				t.Fatalf("another project reads the workflow: %v", terr)
			}
		})
	}
}

func TestEstTokens(t *testing.T) {
	for chars, want := range map[int]int{0: 0, 1: 1, 3: 1, 4: 1, 5: 2, 8: 2, 9: 3} {
		if got := EstTokens(chars); got != want {
			t.Errorf("EstTokens(%d) = %d, want %d", chars, got, want)
		}
	}
}

// TestEstTokensTotalFromTotalChars: the catalog's est_tokens is
// ceil(total chars / 4) of the profile's whole text, not the sum of the
// layers' own (rounded-up) estimates, which overcounts by up to one token
// per layer; each layer keeps its own ceil(chars/4).
func TestEstTokensTotalFromTotalChars(t *testing.T) {
	for _, c := range []struct {
		name        string
		chars       []int
		total, sumL int // the catalog's est_tokens, and the sum of the layers' own
	}{
		{"no layer", nil, 0, 0},
		{"279 characters in one layer", []int{279}, 70, 70},
		{"279 characters in two layers", []int{1, 278}, 70, 71},
		{"four one-character layers", []int{1, 1, 1, 1}, 1, 4},
		{"exact multiples", []int{4, 8, 0}, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var layers []store.FrozenLayer
			for _, n := range c.chars {
				layers = append(layers, store.FrozenLayer{Layer: "skills", Chars: n, Bytes: n})
			}
			s := summary(nil, layers)
			if *s.EstTokens != c.total {
				t.Errorf("catalog est_tokens = %d, want %d", *s.EstTokens, c.total)
			}
			sum := 0
			for _, v := range layerViews(layers, nil) {
				sum += v.EstTokens
			}
			if sum != c.sumL {
				t.Errorf("the layers' est_tokens sum to %d, want %d", sum, c.sumL)
			}
		})
	}
}

// TestDispatchEstTokensTotal: through the tools, a profile whose layers'
// estimates sum to more than its text's estimate reports the latter in
// every view (assembled profile, dispatch, compact workflow).
func TestDispatchEstTokensTotal(t *testing.T) {
	f := newFixture(t)
	// Core and soul of one character each: 1+16+12+1+12+0 = 42 characters,
	// ceil(42/4) = 11 tokens, while the layers' own are 1+4+3+1+3+0 = 12.
	f.gh.files["docs/agents/core.md@"+pinned] = []byte("x")
	f.gh.files["SOUL.md@"+headV1] = []byte("y")
	check := func(view string, out map[string]any) {
		t.Helper()
		cat := out["catalog"].(map[string]any)
		if cat["chars"] != float64(42) || cat["est_tokens"] != float64(11) {
			t.Errorf("%s catalog = %v, want chars 42, est_tokens 11", view, cat)
		}
		sum := 0.0
		for _, l := range out["layers"].([]any) {
			sum += l.(map[string]any)["est_tokens"].(float64)
		}
		if sum != 12 {
			t.Errorf("%s layers' est_tokens sum to %v, want 12 (each ceil(chars/4))", view, sum)
		}
	}
	prof, err := f.call(reader, "catalog_profile_get", map[string]any{"profile_id": "prf_dev"})
	if err != nil {
		t.Fatal(err)
	}
	check("catalog_profile_get", prof)
	out, err := f.call(dispatcher, "workflow_dispatch", map[string]any{"profile_id": "prf_dev"})
	if err != nil {
		t.Fatal(err)
	}
	check("workflow_dispatch", out)
	compact, err := f.call(reader, "workflow_get", map[string]any{"workflow_id": out["workflow_id"]})
	if err != nil {
		t.Fatal(err)
	}
	check("workflow_get", compact)
}

func TestToolPolicies(t *testing.T) {
	want := map[string]middleware.ToolPolicy{
		"catalog_profiles_list": {Scopes: []middleware.Scope{ReadScope}},
		"catalog_profile_get":   {Scopes: []middleware.Scope{ReadScope}},
		"workflow_get":          {Scopes: []middleware.Scope{ReadScope}},
		"workflow_dispatch":     {Scopes: []middleware.Scope{DispatchScope}, Write: true, Dispatch: true},
	}
	tools := Tools(Options{})
	if len(tools) != len(want) {
		t.Fatalf("%d tools", len(tools))
	}
	for _, tool := range tools {
		w := want[tool.Name]
		if fmt.Sprint(tool.Policy) != fmt.Sprint(w) {
			t.Errorf("%s policy = %+v, want %+v", tool.Name, tool.Policy, w)
		}
		if props := tool.Schema["additionalProperties"]; props != false {
			t.Errorf("%s schema allows additional properties", tool.Name)
		}
	}
}
