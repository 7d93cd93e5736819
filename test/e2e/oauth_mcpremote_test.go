package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestOAuthMCPRemote runs mcp-remote (pinned in test/ts/package.json) as a
// stdio proxy in front of the real binary's /mcp/documents, as a desktop
// host that speaks only stdio would: it meets the 401, discovers the
// authorization server, registers, and opens "the browser" for the login.
// The browser is this test: mcp-remote opens URLs with the open package,
// whose xdg-open runs $BROWSER on a machine without a desktop, so BROWSER
// (and xdg-open, first on PATH) is a script that hands the URL to the test,
// which logs alice in at the test identity provider, allows the consent and
// follows the 303 to mcp-remote's callback. After that one login, the
// tools are listed and a documents tool, a catalog tool and
// workflow_dispatch all answer through the proxy. Under CI=true a missing
// node or npm fails the test.
func TestOAuthMCPRemote(t *testing.T) {
	node, dir := tsClient(t)
	o := startOAuthCatalog(t)

	tmp := t.TempDir()
	opened := filepath.Join(tmp, "opened")
	browser := fakeBrowser(t, tmp, opened)
	_, port, err := net.SplitHostPort(gatewaytest.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules", "mcp-remote", "dist", "proxy.js"),
		o.gw.URL+"/mcp/documents", port, "--host", "127.0.0.1", "--transport", "http-only", "--auth-timeout", "150")
	cmd.Dir = tmp
	cmd.Env = append(desktopless(),
		"HOME="+filepath.Join(tmp, "home"), "MCP_REMOTE_CONFIG_DIR="+filepath.Join(tmp, "mcp-auth"),
		"BROWSER="+browser, "PATH="+filepath.Dir(browser)+string(os.PathListSeparator)+os.Getenv("PATH"))
	stdin, stdout, stderr := startPiped(t, cmd)
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil && ctx.Err() == nil {
			t.Logf("mcp-remote ended: %v", err)
		}
		if t.Failed() {
			t.Logf("mcp-remote's log:\n%s", stderr.String())
		}
	}()
	answers := make(chan map[string]any)
	go func() {
		defer close(answers)
		lines := bufio.NewScanner(io.LimitReader(stdout, 16<<20))
		lines.Buffer(make([]byte, 1<<20), 4<<20)
		for lines.Scan() {
			var msg map[string]any
			if json.Unmarshal(lines.Bytes(), &msg) == nil {
				select {
				case answers <- msg:
				case <-ctx.Done():
					return
				}
			}
		}
	}()

	// The login: mcp-remote opens the authorization URL once.
	authorize := waitOpened(ctx, t, opened, 1)[0]
	u, err := url.Parse(authorize)
	if err != nil || u.Scheme+"://"+u.Host != o.gw.URL || u.Path != "/oauth/authorize" {
		t.Fatalf("mcp-remote opened %q", authorize)
	}
	if got := u.Query().Get("scope"); got != "catalog:read documents:read workflow:dispatch" {
		t.Errorf("mcp-remote asks for scope %q, want every scope of the endpoint", got)
	}
	_, resp := consentAnswer(t, o.gw.URL, u.Query())
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Request.URL.String(), "http://127.0.0.1:"+port+"/oauth/callback?") {
		t.Fatalf("the consent's redirect ended at %s with %d, want mcp-remote's callback", resp.Request.URL, resp.StatusCode)
	}
	o.canaries.Add("an OAuth authorization code", resp.Request.URL.Query().Get("code"))

	// The host's side of the stdio connection.
	id := 0
	rpc := func(method string, params any) map[string]any {
		t.Helper()
		id++
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := fmt.Fprintf(stdin, "%s\n", msg); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case a, ok := <-answers:
				if !ok {
					t.Fatalf("mcp-remote closed its output before answering %s", method)
				}
				if a["id"] == float64(id) {
					if a["error"] != nil {
						t.Fatalf("%s: %v", method, a["error"])
					}
					res, _ := a["result"].(map[string]any)
					return res
				}
			case <-ctx.Done():
				t.Fatalf("no answer to %s", method)
			}
		}
	}
	rpc("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "stdio host", "version": "1.0.0"}})
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range rpc("tools/list", map[string]any{})["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	for _, want := range []string{"runtime_bootstrap_get", "catalog_profiles_list", "workflow_dispatch"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list through mcp-remote: %v, want %s", names, want)
		}
	}
	for _, c := range []struct {
		tool   string
		args   map[string]any
		member string
	}{
		{"runtime_bootstrap_get", map[string]any{}, "sources"},
		{"catalog_profiles_list", map[string]any{}, "profiles"},
		{"workflow_dispatch", map[string]any{"profile_id": o.profile}, "workflow_id"},
	} {
		res := rpc("tools/call", map[string]any{"name": c.tool, "arguments": c.args})
		content, _ := res["content"].([]any)
		if res["isError"] == true || len(content) != 1 {
			t.Fatalf("%s through mcp-remote: %v", c.tool, res)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(content[0].(map[string]any)["text"].(string)), &out); err != nil || out[c.member] == nil {
			t.Fatalf("%s through mcp-remote: %v (%v)", c.tool, res, err)
		}
	}
	if n := len(waitOpened(ctx, t, opened, 1)); n != 1 {
		t.Fatalf("mcp-remote opened the browser %d times, want one login", n)
	}
}

// fakeBrowser writes the script that stands in for the browser: it appends
// the URL it is given to opened. It is BROWSER, and xdg-open and
// x-www-browser first on PATH, whichever mcp-remote's opener reaches.
func fakeBrowser(t *testing.T, dir, opened string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nprintf '%s\\n' \"$1\" >> " + shellQuote(opened) + "\n"
	path := filepath.Join(bin, "browser")
	for _, name := range []string{"browser", "xdg-open", "x-www-browser"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// desktopless is this process's environment without what would let an
// opener find a real desktop or browser.
func desktopless() []string {
	var out []string
	for _, kv := range gatewaytest.CleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "DISPLAY", "WAYLAND_DISPLAY", "XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "BROWSER", "HOME", "PATH", "MCP_REMOTE_CONFIG_DIR":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// waitOpened waits until the fake browser was given at least n URLs, or
// ctx ends, and returns them.
func waitOpened(ctx context.Context, t *testing.T, opened string, n int) []string {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(opened)
		if urls := strings.Fields(string(b)); len(urls) >= n {
			return urls
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the browser was not opened %d times", n)
		}
	}
}
