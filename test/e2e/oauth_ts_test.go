package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestOAuthTypeScriptClient (issue 16) runs the official TypeScript MCP SDK
// client (test/ts, pinned in its package.json) against the real binary and
// the in-repo OpenID provider: discovery from the 401, registration with a
// loopback and with a private-use redirect URI, authorization without state
// and without resource, scripted login, consent as a plain 303, token,
// tools/list, a narrowing refresh, the older access token refused, the
// SDK's own refresh, revocation. The script asks this test to play the
// browser at each authorization. Under CI=true a missing node or npm fails
// the test.
func TestOAuthTypeScriptClient(t *testing.T) {
	node, dir := tsClient(t)
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "oauth_client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+o.gw.URL)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncWriter
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var result map[string]any
	var consentStatuses []int
	lines := bufio.NewScanner(io.LimitReader(stdout, 1<<20))
	lines.Buffer(make([]byte, 64<<10), 64<<10)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "AUTHORIZE "):
			u, err := url.Parse(strings.TrimPrefix(line, "AUTHORIZE "))
			if err != nil || u.Scheme+"://"+u.Host != o.gw.URL || u.Path != "/oauth/authorize" {
				t.Fatalf("the SDK authorizes at %q", line)
			}
			_, resp := consentAnswer(t, o.gw.URL, u.Query())
			consentStatuses = append(consentStatuses, resp.StatusCode)
			loc := resp.Header.Get("Location")
			if loc == "" {
				t.Fatalf("consent: %d without a redirect", resp.StatusCode)
			}
			if code, err := url.Parse(loc); err == nil {
				o.canaries.Add("an OAuth authorization code", code.Query().Get("code"))
			}
			if _, err := io.WriteString(stdin, loc+"\n"); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "RESULT "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "RESULT ")), &result); err != nil {
				t.Fatalf("result %q: %v", line, err)
			}
		default:
			t.Logf("node: %s", line)
		}
	}
	if err := cmd.Wait(); err != nil || result == nil {
		t.Fatalf("the TypeScript client failed (%v):\n%s", err, stderr.String())
	}
	t.Logf("TypeScript client saw %v", result)

	if !slices.Equal(consentStatuses, []int{http.StatusSeeOther, http.StatusSeeOther}) {
		t.Errorf("consent answers %v, want two 303s", consentStatuses)
	}
	want := map[string]any{
		// Point 1: the scope hint of the 401 is what the SDK asks for.
		"loopbackAuthorize":        map[string]any{"scope": "documents:read", "hasState": false, "hasResource": false, "method": "S256"},
		"loopbackRedirectHasState": false,
		"nativeRedirect":           "com.example.agw-test:/oauth/callback",
		"narrowedScope":            "documents:read",
		"narrowedTokenStatus":      float64(http.StatusOK),
		"oldTokenStatus":           float64(http.StatusUnauthorized),
		"narrowedAfterSdkRefresh":  float64(http.StatusUnauthorized),
		"revokeStatus":             float64(http.StatusOK),
		"afterRevokeStatus":        float64(http.StatusUnauthorized),
	}
	for k, v := range want {
		got, _ := json.Marshal(result[k])
		exp, _ := json.Marshal(v)
		if string(got) != string(exp) {
			t.Errorf("%s = %s, want %s", k, got, exp)
		}
	}
	native, _ := result["nativeAuthorize"].(map[string]any)
	if native["hasState"] != false || native["resource"] != o.gw.URL+"/mcp/documents" {
		t.Errorf("native authorization %v: want no state and the documents resource", native)
	}
	for _, k := range []string{"nativeScope", "sdkRefreshScope"} {
		if s, _ := result[k].(string); !strings.Contains(s, "documents:read") || len(strings.Fields(s)) < 2 {
			t.Errorf("%s = %q, want every scope", k, s)
		}
	}
	for _, k := range []string{"loopbackTools", "nativeTools"} {
		tools, _ := result[k].([]any)
		if !slices.Contains(tools, any("git_document_get")) {
			t.Errorf("%s = %v, want git_document_get", k, tools)
		}
	}
}

// tsClient returns node and the TypeScript client's directory, installing
// its pinned dependencies when node_modules lacks any of them (npm install
// --no-package-lock: no lockfile naming a registry is written).
func tsClient(t *testing.T) (string, string) {
	t.Helper()
	node, nerr := exec.LookPath("node")
	npm, perr := exec.LookPath("npm")
	if nerr != nil || perr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node and npm are required in CI (apt-get install nodejs npm)")
		}
		t.Skip("node or npm not installed")
	}
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "ts")
	if tsInstalled(t, dir) {
		return node, dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-package-lock", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install in %s: %v\n%s", dir, err, out)
	}
	return node, dir
}

// tsInstalled reports whether every dependency test/ts/package.json pins
// is in its node_modules (a checkout installed before one was added lacks
// it).
func tsInstalled(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(b, &pkg); err != nil || len(pkg.Dependencies) == 0 {
		t.Fatalf("test/ts/package.json: %v, %d dependencies", err, len(pkg.Dependencies))
	}
	for name := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json")); err != nil {
			return false
		}
	}
	return true
}
