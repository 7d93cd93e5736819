package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/golden"
)

// TestContractGolden makes both endpoints' contracts visible as files under
// testdata/contract/: each endpoint's tools/list (names, descriptions,
// input schemas, annotations) and one JSON-RPC exchange per tool, as the
// real binary answers them over HTTP in front of the emulators. A changed
// struct tag, description, error shape or result member fails this test
// with a diff until the files are rewritten with -update and committed, so
// every contract change is reviewed as one. Values that differ between
// runs are normalized (golden.Normalizer).
func TestContractGolden(t *testing.T) {
	t.Run("forgejo", func(t *testing.T) {
		st := startForgejoStack(t, nil)
		d := st.demo
		x := newExchanger(t, st.gw.URL+"/mcp/forgejo", "testdata/contract/forgejo")
		x.toolsList(t, d.BotToken)
		pub := map[string]any{"owner": d.Owner, "repo": d.PublicRepo}
		x.call(t, d.BotToken, "search_repositories", map[string]any{"q": d.PublicRepo})
		x.call(t, d.BotToken, "get_repository", pub)
		x.call(t, d.BotToken, "list_pull_requests", with(pub, "state", "all"))
		x.call(t, d.BotToken, "get_pull_request", with(pub, "index", d.ClosedPull))
		x.call(t, d.BotToken, "get_pull_request_diff", with(pub, "index", d.OpenPull))

		g := prepare(t, st, d.PublicRepo, "write the contract down")
		x.call(t, d.BotToken, "list_agent_work_grants", map[string]any{"state": "all"})
		x.call(t, d.BotToken, "get_agent_work_grant", ref(g))
		x.call(t, d.BotToken, "confirm_agent_work_grant", withTriple(g))
		if err := st.emu.ApproveGrant(g.ID, d.Owner); err != nil {
			t.Fatal(err)
		}
		// A fixed request key: the client chooses it, and the emulator is new.
		const key = "0f8fad5b-d9cb-469f-a165-70867728950e"
		x.call(t, d.BotToken, "submit_agent_work_proposal", submitArgs(g, key, "Contract", "Write the contract down."))
		x.call(t, d.BotToken, "get_agent_work_submission", keyArgs(g, key))
	})
	t.Run("documents", func(t *testing.T) {
		s := newCatalogStack(t, storetest.SQLiteURL(t), true)
		x := newExchanger(t, s.gw.URL+"/mcp/documents", "testdata/contract/documents")
		x.toolsList(t, s.tokenA)
		x.call(t, s.tokenA, "runtime_bootstrap_get", map[string]any{})
		x.call(t, s.tokenA, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme], "max_bytes": 256})
		x.call(t, s.token, "catalog_profiles_list", map[string]any{})
		x.call(t, s.token, "catalog_profile_get", map[string]any{"profile_id": s.profile})
		out := x.call(t, s.token, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		x.call(t, s.token, "workflow_get", map[string]any{"workflow_id": out["workflow_id"], "replay": true})
	})
}

// exchanger posts JSON-RPC requests to one endpoint and compares each
// exchange with its golden file; one Normalizer names the run's IDs and
// SHAs in order of appearance across all of them.
type exchanger struct {
	url, dir string
	norm     *golden.Normalizer
}

func newExchanger(t *testing.T, url, dir string) *exchanger {
	t.Helper()
	return &exchanger{url: url, dir: dir, norm: golden.NewNormalizer()}
}

// toolsList snapshots tools/list as a caller with a bearer sees it (every
// tool of the toolset).
func (x *exchanger) toolsList(t *testing.T, token string) {
	t.Helper()
	req, resp := x.post(t, token, "tools/list", map[string]any{})
	golden.Compare(t, x.dir+"/tools_list.txt", []byte(x.section("request", req)+x.section("response", resp)))
}

// call snapshots one tools/call that must succeed, and returns its result.
func (x *exchanger) call(t *testing.T, token, tool string, args map[string]any) map[string]any {
	t.Helper()
	req, resp := x.post(t, token, "tools/call", map[string]any{"name": tool, "arguments": args})
	var env struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(resp, &env); err != nil || len(env.Result.Content) != 1 || env.Result.IsError {
		t.Fatalf("%s: %v\n%s", tool, err, resp)
	}
	text := env.Result.Content[0].Text
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: result text is not a JSON object: %v", tool, err)
	}
	// The text block is shown once, indented, after the envelope.
	envelope := contentText.ReplaceAll(resp, []byte(`"text":"<the result text below>"`))
	golden.Compare(t, x.dir+"/"+tool+".txt", []byte(x.section("request", req)+x.section("response", envelope)+x.section("result text", []byte(text))))
	return out
}

// contentText is the one "text" member of a tools/call response envelope
// (the result's own members are escaped inside it, so cannot match).
var contentText = regexp.MustCompile(`"text":"(?:[^"\\]|\\.)*"`)

func (x *exchanger) post(t *testing.T, token, method string, params map[string]any) (req, resp []byte) {
	t.Helper()
	req = []byte(mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
	h := map[string]string{"MCP-Protocol-Version": "2025-06-18", "Authorization": "Bearer " + token}
	r, body := postRPC(t, x.url, string(req), h)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", method, r.StatusCode, body)
	}
	return req, []byte(body)
}

// section is one "-- name --" part of a golden file: the normalized JSON,
// indented.
func (x *exchanger) section(name string, raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(x.norm.Text(string(raw))), "", "  "); err != nil {
		b.Reset()
		b.WriteString(x.norm.Text(string(raw)))
	}
	return "-- " + name + " --\n" + b.String() + "\n"
}
