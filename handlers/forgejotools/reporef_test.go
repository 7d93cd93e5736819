package forgejotools

import (
	"reflect"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/args"
)

// TestToolsShareRepoRef: every Forgejo tool that names a repository names
// it with RepoRef's members exactly (pattern, description, required), so
// no tool's copy can drift from the others.
func TestToolsShareRepoRef(t *testing.T) {
	ref := args.Schema[RepoRef]()["properties"].(map[string]any)
	tools := append(append(AnonymousTools(nil), GrantTools(nil)...), PullRequestDiffTool(nil, mcp.Implementation{}, nil))
	withRepo := 0
	for _, tool := range tools {
		props := tool.Schema["properties"].(map[string]any)
		_, hasOwner := props["owner"]
		_, hasRepo := props["repo"]
		if hasOwner != hasRepo {
			t.Errorf("%s names only one of owner and repo", tool.Name)
		}
		if !hasOwner {
			continue
		}
		withRepo++
		required := tool.Schema["required"].([]string)
		for _, member := range []string{"owner", "repo"} {
			if got, want := props[member], ref[member]; !reflect.DeepEqual(got, want) || !slices.Contains(required, member) {
				t.Errorf("%s.%s is %v (required %v), want RepoRef's %v, required", tool.Name, member, got, required, want)
			}
		}
	}
	if withRepo == 0 {
		t.Fatal("no tool names a repository: the test reads the schemas wrong")
	}
}
