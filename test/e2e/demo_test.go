package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDemo runs `agent-gateway demo` as a new user would, reads what it
// prints, and makes the calls it suggests: the anonymous tool list, a
// verified diff page with the printed Forgejo token, and the runtime
// document with the printed gateway token.
func TestDemo(t *testing.T) {
	printed := map[string]string{}
	patterns := map[string]*regexp.Regexp{
		"forgejo":   regexp.MustCompile(`Forgejo endpoint\s+(\S+)`),
		"fjtoken":   regexp.MustCompile(`a Forgejo token\s+(\S+)`),
		"documents": regexp.MustCompile(`documents endpoint\s+(\S+)`),
		"token":     regexp.MustCompile(`a gateway token\s+(\S+)`),
		"source":    regexp.MustCompile(`= source (\S+)`),
	}
	banner := startDemoBanner(t, gatewaytest.FreeAddr(t))
	for _, line := range banner {
		for k, re := range patterns {
			if _, seen := printed[k]; seen {
				continue // the first mention is the one that names it
			}
			if m := re.FindStringSubmatch(line); m != nil {
				printed[k] = m[1]
			}
		}
	}
	if len(printed) < len(patterns) {
		t.Fatalf("demo printed only %v\n%s", printed, strings.Join(banner, "\n"))
	}
	// A client that needs a terminal to log in: the step after `claude mcp
	// add` is printed, and the Inspector's variable named.
	addDocs := slices.Index(banner, "  claude mcp add --transport http documents "+printed["documents"])
	if addDocs < 0 || addDocs+1 >= len(banner) || banner[addDocs+1] != "  claude mcp login documents" {
		t.Fatalf("the banner does not follow `claude mcp add … documents` with `claude mcp login documents`:\n%s", strings.Join(banner, "\n"))
	}
	if !strings.Contains(strings.Join(banner, "\n"), "MCP_AUTO_OPEN_ENABLED=true") {
		t.Fatalf("the banner does not name MCP_AUTO_OPEN_ENABLED=true:\n%s", strings.Join(banner, "\n"))
	}

	fj := gatewaytest.ConnectURL(t, printed["forgejo"], "")
	if got := toolNames(t, fj); strings.Join(got, ",") != strings.Join(anonymousTools, ",") {
		t.Fatalf("demo tools/list = %v", got)
	}
	authed := gatewaytest.ConnectURL(t, printed["forgejo"], printed["fjtoken"])
	page, out := callDiff(t, authed, map[string]any{"owner": "demo", "repo": "gateway", "index": 1})
	if page == nil || page.ChunkBytes == 0 {
		t.Fatalf("demo diff page: %v", out)
	}
	docs := gatewaytest.ConnectURL(t, printed["documents"], printed["token"])
	doc, isErr := callTool(t, docs, "git_document_get", map[string]any{"source_id": printed["source"]})
	if isErr || doc["content"] == "" || doc["next_cursor"] == nil {
		t.Fatalf("demo document: %v", doc)
	}
}
