package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agent-gateway/agent-gateway/handlers/documents"
	"github.com/agent-gateway/agent-gateway/handlers/instructions"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/test/fuzzseed"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// fuzzTools are every tool of every toolset the gateway serves, wired
// without upstreams or store: a call whose arguments decode stops at
// upstream_unconfigured (Forgejo) or insufficient_scope (documents, no
// principal) before touching anything. A toolset added to the gateway
// belongs here too.
func fuzzTools() []toolset.Tool {
	return append(forgejoToolset(nil, nil).Tools(), documentsToolset(documents.Options{}, instructions.Options{}).Tools()...)
}

// toolSeeds are the committed corpus of FuzzToolArguments: for every tool,
// valid arguments and the hostile shapes of the hostile-caller tests.
func toolSeeds(tools []toolset.Tool) []fuzzseed.Seed {
	digest := strings.Repeat("a", 64)
	valid := map[string]string{
		"search_repositories":        `{"q":"gate","page":2}`,
		"get_repository":             `{"owner":"demo","repo":"gateway"}`,
		"list_pull_requests":         `{"owner":"demo","repo":"gateway","state":"all","page":1}`,
		"get_pull_request":           `{"owner":"demo","repo":"gateway","index":1}`,
		"get_pull_request_diff":      `{"owner":"demo","repo":"gateway","index":1,"cursor":"prdiff1.e30.AAAA"}`,
		"list_agent_work_grants":     `{"state":"active","page":1}`,
		"get_agent_work_grant":       `{"owner":"demo","repo":"gateway","grant_id":7001}`,
		"confirm_agent_work_grant":   `{"owner":"demo","repo":"gateway","grant_id":7001,"proposal_schema":"agent_work_grant.v1","proposal_version":1,"proposal_digest":"` + digest + `"}`,
		"submit_agent_work_proposal": `{"owner":"demo","repo":"gateway","grant_id":7001,"proposal_schema":"agent_work_grant.v1","proposal_version":1,"proposal_digest":"` + digest + `","request_key":"0f8fad5b-d9cb-469f-a165-70867728950e","title":"t","body":"b"}`,
		"get_agent_work_submission":  `{"owner":"demo","repo":"gateway","grant_id":7001,"request_key":"0f8fad5b-d9cb-469f-a165-70867728950e"}`,
		"runtime_bootstrap_get":      `{}`,
		"git_document_get":           `{"source_id":"src_abc","start_byte":0,"max_bytes":65536}`,
		"catalog_profiles_list":      `{}`,
		"catalog_profile_get":        `{"profile_id":"prf_abc"}`,
		"workflow_dispatch":          `{"profile_id":"prf_abc"}`,
		"workflow_get":               `{"workflow_id":"wfl_abc","replay":true}`,
	}
	hostile := map[string]func(v string) string{
		"crlf-owner":       func(v string) string { return strings.Replace(v, `"demo"`, `"demo\r\nX-Injected: 1"`, 1) },
		"encoded-slash":    func(v string) string { return strings.Replace(v, `"gateway"`, `"demo%2Fgateway"`, 1) },
		"dot-dot":          func(v string) string { return strings.Replace(v, `"gateway"`, `".."`, 1) },
		"look-alike":       func(v string) string { return strings.Replace(v, `"demo"`, `"ｄｅｍｏ"`, 1) },
		"lone-surrogate":   func(v string) string { return strings.Replace(v, `"demo"`, `"demo\ud800"`, 1) },
		"duplicate-member": func(v string) string { return strings.Replace(v, "{", `{"owner":"x",`, 1) },
		"float": func(v string) string {
			return strings.Replace(strings.Replace(v, ":1,", ":1.0,", 1), ":1}", ":1.0}", 1)
		},
		"int64-overflow": func(v string) string { return strings.Replace(v, ":7001", ":9223372036854775808", 1) },
		"huge-cursor": func(v string) string {
			return strings.TrimSuffix(v, "}") + `,"cursor":"` + strings.Repeat("A", 5000) + `"}`
		},
		"nested": func(v string) string {
			return strings.Replace(v, `"demo"`, strings.Repeat("[", 40)+strings.Repeat("]", 40), 1)
		},
		"null":     func(string) string { return `null` },
		"array":    func(string) string { return `[]` },
		"trailing": func(v string) string { return v + `{}` },
	}
	var seeds []fuzzseed.Seed
	for i, t := range tools {
		v, ok := valid[t.Name]
		if !ok {
			panic("toolSeeds: no valid arguments for " + t.Name)
		}
		seeds = append(seeds, fuzzseed.Seed{Name: t.Name + "-valid", Values: []any{uint8(i), []byte(v)}})
		for name, f := range hostile {
			seeds = append(seeds, fuzzseed.Seed{Name: t.Name + "-" + name, Values: []any{uint8(i), []byte(f(v))}})
		}
	}
	return seeds
}

func TestToolArgumentSeeds(t *testing.T) {
	fuzzseed.Sync(t, "FuzzToolArguments", toolSeeds(fuzzTools()))
}

// FuzzToolArguments calls every tool of every toolset with arbitrary
// arguments. It never panics; a refusal is invalid_arguments (never an
// internal error), and arguments the strict decoder accepts are valid
// against the JSON Schema the tool advertises to models, so a client that
// follows the schema is never surprised and the schema is never looser
// than what the gateway accepts silently.
func FuzzToolArguments(f *testing.F) {
	tools := fuzzTools()
	schemas := make([]*jsonschema.Resolved, len(tools))
	for i, t := range tools {
		raw, err := json.Marshal(t.Schema)
		if err != nil {
			f.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			f.Fatalf("%s: %v", t.Name, err)
		}
		if schemas[i], err = s.Resolve(nil); err != nil {
			f.Fatalf("%s: %v", t.Name, err)
		}
	}
	for _, s := range toolSeeds(tools) {
		f.Add(s.Values[0].(uint8), s.Values[1].([]byte))
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		i := int(which) % len(tools)
		tool := tools[i]
		out, err := tool.Handle(context.Background(), raw)
		if err == nil {
			t.Fatalf("%s answered %v without a principal or an upstream", tool.Name, out)
		}
		var te *toolerr.Error
		if !errors.As(err, &te) {
			t.Fatalf("%s: %v is not a tool error", tool.Name, err)
		}
		switch te.Code {
		case toolerr.InvalidArguments:
			return
		case toolerr.UpstreamUnconfigured, toolerr.InsufficientScope:
			// The arguments decoded.
		default:
			t.Fatalf("%s: unexpected code %s: %v", tool.Name, te.Code, err)
		}
		var instance any
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 || string(trimmed) == "null" {
			trimmed = []byte("{}")
		}
		if err := json.Unmarshal(trimmed, &instance); err != nil {
			t.Fatalf("%s accepted arguments encoding/json cannot read: %v", tool.Name, err)
		}
		if err := schemas[i].Validate(instance); err != nil {
			t.Fatalf("%s accepted %s, which its schema refuses: %v", tool.Name, raw, err)
		}
	})
}
