package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// The catalog suite (docs/architecture.md#instruction-catalog-contract)
// runs on the documents stack: project A with
// its allowlist on h8v6/heyaira, plus an account repository acme/agents with
// instruction documents under docs/agents/, read by another installation.
// Everything is configured with the real admin CLI and exercised through
// the real binary with the SDK client, on both store backends.

const (
	agentsOwner        = "acme"
	agentsRepo         = "agents"
	agentsInstallation = 601
)

// agentFiles is the content of acme/agents at its first commit on main.
var agentFiles = map[string]string{
	"docs/agents/core.md":            "Core rules.\n",
	"docs/agents/modes/worker.md":    "Work carefully.\n",
	"docs/agents/modes/verifier.md":  "Check everything.\n",
	"docs/agents/roles/developer.md": "héllo wörld\n",
	"docs/agents/soul.md":            "Be kind.",
	"docs/agents/skills/emoji.md":    "Skill: 😀 e\u0301\n",
	"docs/agents/skills/empty.md":    "",
}

type catalogStack struct {
	*docStack
	account  string
	agents   string // commit of acme/agents main at setup
	agentRep string // account repository ID
	ins      map[string]string
	profile  string // project A's "developer" profile
	readme   string // project A's instruction-role source of README.md, tracking main
	token    string // alice: catalog:read workflow:dispatch in project A
}

// commitAgents writes a commit of acme/agents on main with files, the
// defaults overridden by changes.
func commitAgents(t *testing.T, emu *githubemu.Emulator, changes map[string]string) string {
	t.Helper()
	var entries []githubemu.Entry
	for p, c := range agentFiles {
		if v, ok := changes[p]; ok {
			c = v
		}
		entries = append(entries, githubemu.Entry{Path: p, Content: []byte(c)})
	}
	for p, c := range changes {
		if _, ok := agentFiles[p]; !ok {
			entries = append(entries, githubemu.Entry{Path: p, Content: []byte(c)})
		}
	}
	sha, err := emu.Commit(agentsOwner, agentsRepo, "main", "agents", entries)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// newCatalogStack configures, with the admin CLI: the account repository
// and an instruction source per file (core pinned, worker mode tracking
// main, the rest pinned), and project A's profile "developer" (mode
// worker): role responsibilities, methodology (project A's README.md,
// tracking main), soul and two skills. Core and mode are configured only
// when withAccountLayers.
func newCatalogStack(t *testing.T, dbURL string, withAccountLayers bool) *catalogStack {
	t.Helper()
	return newCatalogStackWith(t, dbURL, withAccountLayers, stackOptions{})
}

// newCatalogStackWith is newCatalogStack with the gateway's options.
func newCatalogStackWith(t *testing.T, dbURL string, withAccountLayers bool, o stackOptions) *catalogStack {
	t.Helper()
	s := &catalogStack{docStack: newDocStack(t, dbURL, o), ins: map[string]string{}}
	if err := s.emu.CreateRepository(agentsOwner, agentsRepo); err != nil {
		t.Fatal(err)
	}
	s.agents = commitAgents(t, s.emu, nil)
	s.emu.AddInstallation(agentsInstallation, agentsOwner+"/"+agentsRepo)
	for _, p := range s.adminList(t, "list-projects") {
		if p["project_id"] == s.projectA {
			s.account = p["account_id"].(string)
		}
	}
	s.agentRep = s.admin(t, "link-account-repository", "--account-id", s.account, "--github-owner", agentsOwner,
		"--github-repository", agentsRepo, "--installation-id", strconv.Itoa(agentsInstallation))["repository_id"].(string)
	for p := range agentFiles {
		pin := []string{"--commit-sha", s.agents}
		if p == "docs/agents/modes/worker.md" {
			pin = []string{"--track", "main"}
		}
		s.ins[p] = s.addInstruction(t, p, pin...)
	}
	s.readme = s.addSource(t, s.projectA, "instruction", s.docs.Readme, "--track", "main")
	s.profile = s.admin(t, "add-profile", "--project-id", s.projectA, "--name", "developer")["profile_id"].(string)
	for _, l := range []struct{ layer, ids string }{
		{"role_responsibilities", s.ins["docs/agents/roles/developer.md"]},
		{"methodology", s.readme},
		{"soul", s.ins["docs/agents/soul.md"]},
		{"skills", s.ins["docs/agents/skills/emoji.md"] + "," + s.ins["docs/agents/skills/empty.md"]},
	} {
		s.admin(t, "set-profile-layer", "--profile-id", s.profile, "--layer", l.layer, "--source-id", l.ids)
	}
	if withAccountLayers {
		s.admin(t, "set-account-core", "--account-id", s.account, "--source-id", s.ins["docs/agents/core.md"])
		s.admin(t, "set-account-mode", "--account-id", s.account, "--mode", "worker", "--source-id", s.ins["docs/agents/modes/worker.md"])
	}
	s.token = s.consent(t, s.projectA, "alice", "catalog:read workflow:dispatch")
	return s
}

func (s *catalogStack) addInstruction(t *testing.T, path string, pin ...string) string {
	t.Helper()
	args := append([]string{"add-instruction-source", "--account-id", s.account, "--github-owner", agentsOwner,
		"--github-repository", agentsRepo, "--path", path}, pin...)
	return s.admin(t, args...)["source_id"].(string)
}

// adminList runs a list command that must succeed and returns its records.
func (s *docStack) adminList(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	code, out, errs := s.runAdmin(t, args...)
	if code != 0 {
		t.Fatalf("admin %v: exit %d\n%s", args, code, errs)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("admin %v: output is not a JSON array: %v\n%s", args, err, out)
	}
	return recs
}

// layerWant is one layer's expected metadata, computed by hand: sha256sum
// and wc -c of the text, code points counted on paper.
type layerWant struct {
	layer                 string
	position              int
	sha                   string
	bytes, chars, tokens  int
	provenance, commitKey string // commitKey: "agents", "docs" (the docs repo's main), or a literal
}

func handLayers(withAccount bool) []layerWant {
	all := []layerWant{
		{"core", 1, "194738bf7b9d17a6e10c3cb585f2280ad93c9abb9da3c2a01f8229af08b6927b", 12, 12, 3, "commit:", "agents"},
		{"mode", 1, "eb162efc3b1fed1e2fe58ce02b920b02dc138bd830387670b4adaa277932c8bd", 16, 16, 4, "tracking:main", "agents"},
		// "héllo wörld\n": two 2-byte letters, 14 bytes, 12 code points.
		{"role_responsibilities", 1, "3828eeee974aa7486e7acc258e5c73a0115e168444d6688deb8d5d1306d1f57d", 14, 12, 3, "commit:", "agents"},
		{"methodology", 1, "c45f29746d1a3bdf0c8485c4dea8d26c7e1e26258d4359c6ee0fa98ba7388fba", 36, 36, 9, "tracking:main", "docs"},
		{"soul", 1, "5499befb38dbf3fcc08107141cb2a9e7f42a6aae403361dc3601b8296d7967ea", 8, 8, 2, "commit:", "agents"},
		// "Skill: 😀 e\u0301\n": a 4-byte emoji is one code point, e and its
		// combining accent are two; 16 bytes, 12 code points, ceil(12/4) = 3.
		{"skills", 1, "3b2e1a79edb5e103bb9b35ffb77dce671a33e70577913aba5508744f5bf1cf0e", 16, 12, 3, "commit:", "agents"},
		{"skills", 2, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0, 0, 0, "commit:", "agents"},
	}
	if withAccount {
		return all
	}
	return all[2:]
}

const handInstructions = "## Core\n\nCore rules.\n" +
	"\n## Mode: worker\n\nWork carefully.\n" +
	"\n## Role responsibilities\n\nhéllo wörld\n" +
	"\n## Methodology\n\n# Docs fixture\n\nA small ASCII file.\n" +
	"\n## Soul\n\nBe kind.\n" +
	"\n## Skills (1/2)\n\nSkill: 😀 e\u0301\n" +
	"\n## Skills (2/2)\n\n"

func (s *catalogStack) checkLayers(t *testing.T, got any, want []layerWant, commits map[string]string) {
	t.Helper()
	layers, _ := got.([]any)
	if len(layers) != len(want) {
		t.Fatalf("%d layers, want %d: %v", len(layers), len(want), got)
	}
	for i, w := range want {
		l := layers[i].(map[string]any)
		commit := commits[w.commitKey]
		prov := w.provenance
		if prov == "commit:" {
			prov += commit
		}
		if l["layer"] != w.layer || l["position"] != float64(w.position) || l["sha256"] != w.sha || l["bytes"] != float64(w.bytes) ||
			l["chars"] != float64(w.chars) || l["est_tokens"] != float64(w.tokens) || l["provenance"] != prov || l["commit_sha"] != commit {
			t.Errorf("layer %d = %v\nwant %+v (commit %s)", i, l, w, commit)
		}
	}
}

// dispatchAsync calls workflow_dispatch on another goroutine.
func dispatchAsync(cs *mcp.ClientSession, profile string) <-chan map[string]any {
	done := make(chan map[string]any, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_dispatch", Arguments: map[string]any{"profile_id": profile}})
		var out map[string]any
		if err != nil || len(res.Content) != 1 {
			done <- map[string]any{"transport_error": err}
			return
		}
		_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out)
		done <- out
	}()
	return done
}

// TestCatalogDispatchAndReplay: layer order and metadata equal the values
// computed by hand; the compact view keeps them without text; a branch
// moved after dispatch changes a new dispatch but not the replay.
func TestCatalogDispatchAndReplay(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStack(t, freshDB(t), true)
		cs := s.session(t, s.token)
		commits := map[string]string{"agents": s.agents, "docs": s.docs.Commit}

		list, isErr := callTool(t, cs, "catalog_profiles_list", nil)
		if isErr || len(list["profiles"].([]any)) != 1 {
			t.Fatalf("list: %v", list)
		}
		p := list["profiles"].([]any)[0].(map[string]any)
		var order []string
		for _, l := range p["layers"].([]any) {
			order = append(order, l.(map[string]any)["layer"].(string))
		}
		if p["profile"].(map[string]any)["profile_id"] != s.profile || len(p["catalog"].(map[string]any)["layers_missing"].([]any)) != 0 ||
			strings.Join(order, " ") != "core mode role_responsibilities methodology soul skills skills" {
			t.Fatalf("listed profile: %v", p)
		}

		prof, isErr := callTool(t, cs, "catalog_profile_get", map[string]any{"profile_id": s.profile})
		if isErr {
			t.Fatalf("profile_get: %v", prof)
		}
		s.checkLayers(t, prof["layers"], handLayers(true), commits)

		s.emu.ResetCounters()
		out, isErr := callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr {
			t.Fatalf("dispatch: %v", out)
		}
		s.checkLayers(t, out["layers"], handLayers(true), commits)
		cat := out["catalog"].(map[string]any)
		if cat["source_bytes"] != float64(102) || cat["chars"] != float64(96) || cat["est_tokens"] != float64(24) ||
			cat["budget_bytes"] != float64(61440) || len(cat["layers_missing"].([]any)) != 0 {
			t.Fatalf("catalog = %v", cat)
		}
		if out["instructions"] != handInstructions {
			t.Fatalf("instructions = %q\nwant %q", out["instructions"], handInstructions)
		}
		// Tracking sources resolved their branch at dispatch: once per
		// repository's main.
		var branches []string
		for _, r := range s.emu.Requests() {
			if r.Route == githubemu.RouteBranch {
				branches = append(branches, r.Path)
			}
		}
		if strings.Join(branches, " ") != "/repos/acme/agents/branches/main /repos/h8v6/heyaira/branches/main" {
			t.Fatalf("branch requests = %v", branches)
		}
		id := out["workflow_id"].(string)

		compact, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id})
		if isErr || compact["instructions"] != nil || compact["profile"].(map[string]any)["name"] != "developer" || compact["mode"] != "worker" {
			t.Fatalf("compact view: %v", compact)
		}
		s.checkLayers(t, compact["layers"], handLayers(true), commits)
		for _, l := range compact["layers"].([]any) {
			if _, ok := l.(map[string]any)["text"]; ok {
				t.Fatal("the compact view carries layer text")
			}
		}

		// Move acme/agents' main, which the mode tracks.
		moved := commitAgents(t, s.emu, map[string]string{"docs/agents/modes/worker.md": "Work faster.\n"})
		replay, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id, "replay": true})
		if isErr || replay["replayed"] != true || replay["instructions"] != handInstructions {
			t.Fatalf("replay after the branch moved: %v", replay)
		}
		s.checkLayers(t, replay["layers"], handLayers(true), commits)

		again, isErr := callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		mode := again["layers"].([]any)[1].(map[string]any)
		if isErr || mode["commit_sha"] != moved || mode["provenance"] != "tracking:main" ||
			mode["sha256"] != "2c4b080d5c8a39c975ec4b904bf33980485f634374fdb84c3492f401d3a615b9" || mode["bytes"] != float64(13) {
			t.Fatalf("a new dispatch after the branch moved: %v", mode)
		}
		// The first workflow still replays its own bytes.
		if replay, _ := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id, "replay": true}); replay["instructions"] != handInstructions {
			t.Fatal("the second dispatch changed the first workflow")
		}
		if ws := s.adminList(t, "list-workflows", "--project-id", s.projectA); len(ws) != 2 || ws[1]["workflow_id"] != id || ws[0]["subject"] != "alice" {
			t.Fatalf("stored workflows: %v", ws)
		}

		// A replay of a source revoked since dispatch is refused; the compact
		// view stays.
		s.admin(t, "revoke-document-source", "--project-id", s.projectA, "--source-id", s.readme)
		if out, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id, "replay": true}); !isErr || errorCode(t, out) != "source_revoked" {
			t.Fatalf("replay of a revoked source: %v", out)
		}
		if _, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id}); isErr {
			t.Fatal("compact view refused after revocation")
		}
	})
}

// TestCatalogRecheckBeforeStore: the dispatch's last read is held while the
// admin CLI revokes a layer already read, revokes the account repository,
// or reconfigures the mode; each dispatch then fails and stores nothing.
func TestCatalogRecheckBeforeStore(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStack(t, freshDB(t), true)
		cs := s.session(t, s.token)
		last := "/repos/acme/agents/contents/docs/agents/skills/empty.md"
		core := s.ins["docs/agents/core.md"]

		for _, c := range []struct {
			name, code, layer string
			change            func()
		}{
			{"mode reconfigured", "catalog_changed", "", func() {
				s.admin(t, "set-account-mode", "--account-id", s.account, "--mode", "worker", "--source-id", s.ins["docs/agents/modes/verifier.md"])
			}},
			{"core revoked", "source_revoked", "core", func() {
				s.admin(t, "revoke-instruction-source", "--account-id", s.account, "--source-id", core)
			}},
			{"account repository revoked", "source_revoked", "core", func() {
				s.admin(t, "revoke-account-repository", "--account-id", s.account, "--repository-id", s.agentRep)
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if c.name == "account repository revoked" {
					// The core revoked above is replaced first.
					core = s.addInstruction(t, "docs/agents/core.md", "--commit-sha", s.agents)
					s.admin(t, "set-account-core", "--account-id", s.account, "--source-id", core)
				}
				hold := s.emu.HoldRequest(last)
				done := dispatchAsync(cs, s.profile)
				select {
				case <-hold.Reached():
				case out := <-done:
					t.Fatalf("dispatch ended before its last read: %v", out)
				case <-time.After(time.Minute):
					t.Fatal("the last read never came")
				}
				// Every earlier layer, the core included, has been read.
				read := false
				for _, r := range s.emu.Requests() {
					read = read || r.Path == "/repos/acme/agents/contents/docs/agents/core.md"
				}
				if !read {
					t.Fatal("the core was not read before the hold")
				}
				c.change()
				hold.Release()
				out := <-done
				if out["error"] == nil || errorCode(t, out) != c.code {
					t.Fatalf("dispatch = %v, want %s", out, c.code)
				}
				if c.layer != "" && out["error"].(map[string]any)["layer"] != c.layer {
					t.Fatalf("error names layer %v, want %s", out["error"], c.layer)
				}
				if ws := s.adminList(t, "list-workflows", "--project-id", s.projectA); len(ws) != 0 {
					t.Fatalf("a refused dispatch stored %d workflows", len(ws))
				}
			})
		}
	})
}

// TestCatalogMissingLayers: without account core/mode the dispatch keeps
// the profile's own instructions, byte for byte, and reports the missing
// layers; configuring one removes it from the report. The profile's
// methodology, soul and skills are reported the same way when cleared;
// role instructions, the one optional layer, never are (the stack's
// profile has none).
func TestCatalogMissingLayers(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStack(t, freshDB(t), false)
		cs := s.session(t, s.token)
		commits := map[string]string{"agents": s.agents, "docs": s.docs.Commit}

		out, isErr := callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr || mustJSON(t, out["catalog"].(map[string]any)["layers_missing"]) != `["core","mode"]` {
			t.Fatalf("dispatch without core and mode: %v", out)
		}
		s.checkLayers(t, out["layers"], handLayers(false), commits)
		want := handInstructions[strings.Index(handInstructions, "## Role"):]
		if out["instructions"] != want {
			t.Fatalf("instructions = %q\nwant %q", out["instructions"], want)
		}
		compact, _ := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": out["workflow_id"]})
		if mustJSON(t, compact["catalog"].(map[string]any)["layers_missing"]) != `["core","mode"]` {
			t.Fatalf("stored workflow: %v", compact["catalog"])
		}

		s.admin(t, "set-account-core", "--account-id", s.account, "--source-id", s.ins["docs/agents/core.md"])
		list, _ := callTool(t, cs, "catalog_profiles_list", nil)
		if got := list["profiles"].([]any)[0].(map[string]any)["catalog"].(map[string]any)["layers_missing"]; mustJSON(t, got) != `["mode"]` {
			t.Fatalf("listed layers_missing = %v", got)
		}
		out, isErr = callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr || mustJSON(t, out["catalog"].(map[string]any)["layers_missing"]) != `["mode"]` ||
			!strings.HasPrefix(out["instructions"].(string), "## Core\n\nCore rules.\n\n## Role responsibilities") {
			t.Fatalf("dispatch with a core only: %v", out)
		}
		if recs := s.adminList(t, "list-profiles", "--project-id", s.projectA); mustJSON(t, recs[0]["layers_missing"]) != `["mode"]` {
			t.Fatalf("admin list-profiles: %v", recs)
		}
		// A configured source that cannot be read fails the dispatch.
		s.emu.SetFault(githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 404, Times: 1})
		if out, isErr := callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile}); !isErr ||
			errorCode(t, out) != "provider_not_found" || out["error"].(map[string]any)["layer"] != "core" {
			t.Fatalf("unreadable core: %v", out)
		}
		s.emu.ClearFaults()

		// est_tokens of the profile is ceil(total chars / 4), not the sum
		// of the layers' own: a one-character core and soul make the text
		// 1+12+36+1+12+0 = 62 characters, 16 tokens, while the layers'
		// estimates are 1+3+9+1+3+0 = 17.
		odd := commitAgents(t, s.emu, map[string]string{"docs/agents/core-odd.md": "x", "docs/agents/soul-odd.md": "y"})
		s.admin(t, "set-account-core", "--account-id", s.account, "--source-id", s.addInstruction(t, "docs/agents/core-odd.md", "--commit-sha", odd))
		s.admin(t, "set-profile-layer", "--profile-id", s.profile, "--layer", "soul", "--source-id", s.addInstruction(t, "docs/agents/soul-odd.md", "--commit-sha", odd))
		out, isErr = callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr {
			t.Fatalf("dispatch with odd layers: %v", out)
		}
		compact, _ = callTool(t, cs, "workflow_get", map[string]any{"workflow_id": out["workflow_id"]})
		for view, v := range map[string]map[string]any{"dispatch": out, "workflow_get": compact} {
			sum := 0.0
			for _, l := range v["layers"].([]any) {
				sum += l.(map[string]any)["est_tokens"].(float64)
			}
			if cat := v["catalog"].(map[string]any); cat["chars"] != float64(62) || cat["est_tokens"] != float64(16) || sum != 17 {
				t.Fatalf("%s: catalog %v, layers' est_tokens sum %v; want chars 62, est_tokens 16, sum 17", view, cat, sum)
			}
		}

		// Clearing the profile's methodology, soul and skills leaves core
		// and role responsibilities, and every view reports the rest.
		for _, layer := range []string{"methodology", "soul", "skills"} {
			s.admin(t, "set-profile-layer", "--profile-id", s.profile, "--layer", layer, "--clear")
		}
		const wantMissing = `["mode","methodology","soul","skills"]`
		out, isErr = callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr || mustJSON(t, out["catalog"].(map[string]any)["layers_missing"]) != wantMissing ||
			out["instructions"] != "## Core\n\nx\n\n## Role responsibilities\n\nhéllo wörld\n" {
			t.Fatalf("dispatch without methodology, soul and skills: %v", out)
		}
		compact, _ = callTool(t, cs, "workflow_get", map[string]any{"workflow_id": out["workflow_id"]})
		list, _ = callTool(t, cs, "catalog_profiles_list", nil)
		prof, _ := callTool(t, cs, "catalog_profile_get", map[string]any{"profile_id": s.profile})
		for view, got := range map[string]any{
			"workflow_get":          compact["catalog"].(map[string]any)["layers_missing"],
			"catalog_profiles_list": list["profiles"].([]any)[0].(map[string]any)["catalog"].(map[string]any)["layers_missing"],
			"catalog_profile_get":   prof["catalog"].(map[string]any)["layers_missing"],
			"admin list-profiles":   s.adminList(t, "list-profiles", "--project-id", s.projectA)[0]["layers_missing"],
			"admin list-workflows":  s.adminList(t, "list-workflows", "--project-id", s.projectA)[0]["layers_missing"],
		} {
			if mustJSON(t, got) != wantMissing {
				t.Errorf("%s: layers_missing %s, want %s", view, mustJSON(t, got), wantMissing)
			}
		}
	})
}

// TestCatalogBudgetBoundary: core and mode count towards the 61,440-byte
// budget of raw source text; exactly 60 KiB dispatches, one byte more
// fails naming the layers. The text is multi-byte, so characters and bytes
// differ: the budget counts bytes.
func TestCatalogBudgetBoundary(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStack(t, freshDB(t), true)
		cs := s.session(t, s.token)
		const others = 14 + 36 + 8 + 16 + 0 // the profile's own layers
		const mode = 16                     // "Work carefully.\n", tracking main
		coreBytes := 61440 - others - mode
		exact := strings.Repeat("é", coreBytes/2) + strings.Repeat("c", coreBytes%2)
		over := exact + "c"
		commit := commitAgents(t, s.emu, map[string]string{"docs/agents/core-exact.md": exact, "docs/agents/core-over.md": over})
		for _, c := range []struct {
			name, path string
			fail       bool
		}{{"exactly 60 KiB", "docs/agents/core-exact.md", false}, {"one byte more", "docs/agents/core-over.md", true}} {
			t.Run(c.name, func(t *testing.T) {
				src := s.addInstruction(t, c.path, "--commit-sha", commit)
				s.admin(t, "set-account-core", "--account-id", s.account, "--source-id", src)
				for _, tool := range []string{"catalog_profile_get", "workflow_dispatch"} {
					out, isErr := callTool(t, cs, tool, map[string]any{"profile_id": s.profile})
					if !c.fail {
						if isErr || out["catalog"].(map[string]any)["source_bytes"] != float64(61440) ||
							out["layers"].([]any)[0].(map[string]any)["chars"] != float64(coreBytes/2+coreBytes%2) {
							t.Fatalf("%s at the budget: %v", tool, out["catalog"])
						}
						continue
					}
					e, _ := out["error"].(map[string]any)
					msg, _ := e["message"].(string)
					if !isErr || e["code"] != "catalog_budget_exceeded" || e["source_bytes"] != float64(61441) || e["budget_bytes"] != float64(61440) ||
						!strings.Contains(msg, "Core "+c.path) || !strings.Contains(msg, "Mode docs/agents/modes/worker.md (16 bytes)") ||
						len(e["layers"].([]any)) != 7 {
						t.Fatalf("%s over the budget: %v", tool, out)
					}
				}
			})
		}
		if ws := s.adminList(t, "list-workflows", "--project-id", s.projectA); len(ws) != 1 || ws[0]["source_bytes"] != float64(61440) {
			t.Fatalf("stored workflows: %v", ws)
		}
	})
}

// TestCatalogTenancy: another project's sources never enter a profile (the
// admin CLI refuses them), and another project sees neither the profile nor
// its workflows; scopes are enforced before any read.
func TestCatalogTenancy(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStack(t, freshDB(t), true)
		alice := s.session(t, s.token)
		wf, isErr := callTool(t, alice, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr {
			t.Fatal(wf)
		}

		// Project B, same account, with an instruction source of its own.
		projectB := s.admin(t, "create-project", "--name", "project-b")["project_id"].(string)
		s.admin(t, "add-member", "--project-id", projectB, "--subject", "carol")
		s.admin(t, "link-repository", "--project-id", projectB, "--github-owner", docsOwner, "--github-repository", docsRepo,
			"--installation-id", strconv.Itoa(installationID))
		srcB := s.addSource(t, projectB, "instruction", s.docs.Readme, "--track", "main")
		code, _, errs := s.runAdmin(t, "set-profile-layer", "--profile-id", s.profile, "--layer", "soul", "--source-id", srcB)
		if code == 0 || !strings.Contains(errs, "not found") {
			t.Fatalf("project B's source entered project A's profile: exit %d %s", code, errs)
		}
		// Nor does a runtime-role source of project A.
		code, _, errs = s.runAdmin(t, "set-profile-layer", "--profile-id", s.profile, "--layer", "soul", "--source-id", s.sources[s.docs.Runtime])
		if code == 0 || !strings.Contains(errs, "instruction") {
			t.Fatalf("a runtime source entered the profile: exit %d %s", code, errs)
		}

		carol := s.session(t, s.consent(t, projectB, "carol", "catalog:read workflow:dispatch"))
		if list, _ := callTool(t, carol, "catalog_profiles_list", nil); len(list["profiles"].([]any)) != 0 {
			t.Fatalf("project B lists %v", list)
		}
		s.emu.ResetCounters()
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"catalog_profile_get", map[string]any{"profile_id": s.profile}},
			{"workflow_dispatch", map[string]any{"profile_id": s.profile}},
			{"workflow_get", map[string]any{"workflow_id": wf["workflow_id"]}},
			{"workflow_get", map[string]any{"workflow_id": wf["workflow_id"], "replay": true}},
		} {
			if out, isErr := callTool(t, carol, c.tool, c.args); !isErr || errorCode(t, out) != "not_found" {
				t.Fatalf("project B %s: %v", c.tool, out)
			}
		}
		// An account-wide profile serves both projects of the account, and
		// no project of another account.
		shared := s.admin(t, "add-profile", "--account-id", s.account, "--name", "reviewer", "--mode", "verifier")["profile_id"].(string)
		s.admin(t, "set-profile-layer", "--profile-id", shared, "--layer", "role_responsibilities", "--source-id", s.ins["docs/agents/roles/developer.md"])
		code, _, _ = s.runAdmin(t, "set-profile-layer", "--profile-id", shared, "--layer", "soul", "--source-id", s.readme)
		if code == 0 {
			t.Fatal("a project source entered an account-wide profile")
		}
		out, isErr := callTool(t, carol, "workflow_dispatch", map[string]any{"profile_id": shared})
		// It names role responsibilities only; the account has no verifier mode.
		if isErr || mustJSON(t, out["catalog"].(map[string]any)["layers_missing"]) != `["mode","methodology","soul","skills"]` || out["project_id"] != projectB {
			t.Fatalf("project B dispatching the account profile: %v", out)
		}
		other := s.admin(t, "create-account", "--name", "other")["account_id"].(string)
		projectC := s.admin(t, "create-project", "--name", "project-c", "--account", other)["project_id"].(string)
		s.admin(t, "add-member", "--project-id", projectC, "--subject", "dave")
		dave := s.session(t, s.consent(t, projectC, "dave", "catalog:read workflow:dispatch"))
		if out, isErr := callTool(t, dave, "workflow_dispatch", map[string]any{"profile_id": shared}); !isErr || errorCode(t, out) != "not_found" {
			t.Fatalf("another account's project dispatched the shared profile: %v", out)
		}
		if n := s.emu.ContentsRequests(); n != 2 {
			// Only project B's dispatch of the shared profile read: core and
			// its role responsibilities.
			t.Fatalf("%d contents reads, want 2", n)
		}

		// Scopes: catalog:read cannot dispatch; documents:read reads nothing here.
		endpoint := s.gw.URL + "/mcp/documents"
		s.admin(t, "add-member", "--project-id", s.projectA, "--subject", "erin")
		readOnly := s.consent(t, s.projectA, "erin", "catalog:read")
		docsOnly := s.consent(t, s.projectA, "erin", "documents:read")
		legacy := s.admin(t, "issue-legacy-token", "--project-id", s.projectA, "--permissions", "memory,task")["token"].(string)
		s.emu.ResetCounters()
		// The challenge names what to ask for: the endpoint's scopes the
		// caller holds, then the one the tool needs.
		for _, c := range []struct {
			token, tool, scope string
		}{
			{readOnly, "workflow_dispatch", "catalog:read workflow:dispatch"},
			{docsOnly, "catalog_profiles_list", "documents:read catalog:read"},
			{docsOnly, "workflow_get", "documents:read catalog:read"},
			{legacy, "catalog_profile_get", "catalog:read"},
			{legacy, "workflow_dispatch", "workflow:dispatch"},
		} {
			resp, body := rawCall(t, endpoint, c.token, c.tool, map[string]any{"profile_id": s.profile})
			wa := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != 403 || !strings.Contains(wa, `scope="`+c.scope+`"`) || !strings.Contains(body, "insufficient_scope") {
				t.Fatalf("%s: %d %q %s", c.tool, resp.StatusCode, wa, body)
			}
		}
		if n := len(s.emu.Requests()); n != 0 {
			t.Fatalf("refused callers reached GitHub %d times", n)
		}
	})
}

// TestCatalogWorkflowRetention: a workflow outlives a purge under the
// default retention (30 days), and once older than
// catalog.workflow_retention the purge deletes it with its layers:
// workflow_get (compact and replay) then answers not_found, the admin no
// longer lists it, and the metrics listener counts the rows.
func TestCatalogWorkflowRetention(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStack(t, freshDB(t), true)
		out, isErr := callTool(t, s.session(t, s.token), "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr {
			t.Fatalf("dispatch: %v", out)
		}
		id := out["workflow_id"]
		// purged reports whether this gateway has run a purge; every start
		// runs one at once.
		purged := func() (float64, string) {
			_, exposition := get(t, s.gw.MetricsURL)
			return metricValue(t, exposition, "agent_gateway_workflow_purge_runs_total", `outcome="purged"`), exposition
		}
		waitFor := func(what string, done func() bool) {
			t.Helper()
			for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(200 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s never happened:\n%s", what, s.gw.Logs())
				}
			}
		}

		// A new gateway with the defaults purges at start and keeps it. The
		// purged row counts are served on the metrics listener only.
		s.restart(t, map[string]string{"AGENT_GATEWAY_METRICS_LISTEN": gatewaytest.FreeAddr(t)})
		waitFor("a purge with the default retention", func() bool { n, _ := purged(); return n >= 1 })
		cs := s.session(t, s.token)
		if got, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id, "replay": true}); isErr || got["replayed"] != true {
			t.Fatalf("the workflow after a purge under the default retention: %v", got)
		}

		// Retention of a millisecond: the next gateway's purge takes it.
		s.restart(t, map[string]string{"AGENT_GATEWAY_CATALOG_WORKFLOW_RETENTION": "1ms", "AGENT_GATEWAY_METRICS_LISTEN": gatewaytest.FreeAddr(t)})
		cs = s.session(t, s.token)
		waitFor("the purge of the old workflow", func() bool {
			got, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id})
			return isErr && errorCode(t, got) == "not_found"
		})
		if got, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": id, "replay": true}); !isErr || errorCode(t, got) != "not_found" {
			t.Fatalf("replay of a purged workflow: %v", got)
		}
		if ws := s.adminList(t, "list-workflows", "--project-id", s.projectA); len(ws) != 0 {
			t.Fatalf("the admin still lists %v", ws)
		}
		_, exposition := purged()
		if metricValue(t, exposition, "agent_gateway_workflow_purged_rows_total", `table="workflows"`) != 1 ||
			metricValue(t, exposition, "agent_gateway_workflow_purged_rows_total", `table="workflow_layers"`) != 7 ||
			metricValue(t, exposition, "agent_gateway_workflow_purge_runs_total", `outcome="failed"`) != 0 {
			t.Fatalf("purge metrics:\n%s", grepLines(exposition, "agent_gateway_workflow_purge"))
		}
	})
}

// TestCatalogDispatchBound: with catalog.dispatches_per_hour at 2, a
// principal's third dispatch in the hour is refused with 429
// rate_limited (budget dispatch, Retry-After of the hour) before GitHub is
// read or anything is stored; the same principal still reads, and another
// principal still dispatches; /metrics counts the refusal.
func TestCatalogDispatchBound(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStackWith(t, freshDB(t), true, stackOptions{env: map[string]string{"AGENT_GATEWAY_CATALOG_DISPATCHES_PER_HOUR": "2"}})
		cs := s.session(t, s.token)
		var first any
		for i := range 2 {
			out, isErr := callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
			if isErr {
				t.Fatalf("dispatch %d within the bound: %v", i+1, out)
			}
			first = cmp.Or(first, out["workflow_id"])
		}

		s.emu.ResetCounters()
		resp, body := rawCall(t, s.gw.URL+"/mcp/documents", s.token, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		s.gw.Record(body)
		var rpc struct {
			Error struct {
				Code int            `json:"code"`
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &rpc); err != nil {
			t.Fatalf("refusal body: %v\n%s", err, body)
		}
		if d := rpc.Error.Data; resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3600" ||
			rpc.Error.Code != -32029 || d["code"] != "rate_limited" || d["budget"] != "dispatch" || d["retry_after_seconds"] != float64(3600) {
			t.Fatalf("third dispatch: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		if n := len(s.emu.Requests()); n != 0 {
			t.Fatalf("the refused dispatch reached GitHub %d times", n)
		}
		if ws := s.adminList(t, "list-workflows", "--project-id", s.projectA); len(ws) != 2 {
			t.Fatalf("%d workflows stored, want the 2 within the bound", len(ws))
		}

		// Reading is not dispatching: the bound leaves it alone.
		if out, isErr := callTool(t, cs, "workflow_get", map[string]any{"workflow_id": first, "replay": true}); isErr {
			t.Fatalf("replay after the bound: %v", out)
		}
		if out, isErr := callTool(t, cs, "catalog_profile_get", map[string]any{"profile_id": s.profile}); isErr {
			t.Fatalf("profile_get after the bound: %v", out)
		}
		// Another consent is another principal, with its own bound.
		other := s.session(t, s.consent(t, s.projectA, "alice", "workflow:dispatch"))
		if out, isErr := callTool(t, other, "workflow_dispatch", map[string]any{"profile_id": s.profile}); isErr {
			t.Fatalf("another principal's dispatch: %v", out)
		}
		_, exposition := get(t, s.gw.URL+"/metrics")
		if n := metricValue(t, exposition, "agent_gateway_budget_rejections_total", `budget="dispatch"`); n != 1 {
			t.Fatalf("dispatch rejections = %v, want 1:\n%s", n, grepLines(exposition, "budget_rejections"))
		}
	})
}

// TestCatalogDispatchBoundAcrossReplicas: two replicas sharing Redis spend
// one dispatch bound per principal: one dispatch on each, then both refuse.
func TestCatalogDispatchBoundAcrossReplicas(t *testing.T) {
	requireRedis(t)
	s := newCatalogStackWith(t, storetest.PostgresURL(t), true, stackOptions{env: map[string]string{
		"AGENT_GATEWAY_CATALOG_DISPATCHES_PER_HOUR": "2",
		"AGENT_GATEWAY_RATELIMIT_REDIS_URL":         "redis://127.0.0.1:6379/0",
	}})
	b := gatewaytest.Start(t, gatewaytest.Options{Env: s.env, Canaries: s.canaries})
	args := map[string]any{"profile_id": s.profile}
	for i, gw := range []string{s.gw.URL, b.URL} {
		if resp, body := rawCall(t, gw+"/mcp/documents", s.token, "workflow_dispatch", args); resp.StatusCode != http.StatusOK || strings.Contains(body, `"isError":true`) {
			t.Fatalf("dispatch %d within the shared bound: %d %s", i+1, resp.StatusCode, body)
		}
	}
	for _, gw := range []string{s.gw.URL, b.URL} {
		resp, body := rawCall(t, gw+"/mcp/documents", s.token, "workflow_dispatch", args)
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, `"budget":"dispatch"`) {
			t.Fatalf("%s dispatched beyond the bound spent across both replicas: %d %s", gw, resp.StatusCode, body)
		}
	}
	if ws := s.adminList(t, "list-workflows", "--project-id", s.projectA); len(ws) != 2 {
		t.Fatalf("%d workflows stored, want 2", len(ws))
	}
}
