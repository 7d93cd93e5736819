package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// The hostile-caller tests through the real binary: what an untrusted MCP
// caller, a browser steered by a hostile page, or a careless operator can
// send. Every refusal happens before any upstream request (the emulators'
// request logs prove it), and the canary scan of each stack proves no
// secret reached a log, a response or /metrics.

// accessLines counts the gateway's access-log lines for /mcp/forgejo (not
// /healthz, whose line may be written just after the start-up probe read
// its answer).
func accessLines(logs string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, `"path":"/mcp/forgejo"`) {
			n++
		}
	}
	return n
}

// TestHostileCallerSlowloris: clients trickling their headers are cut off
// after http.read_header_timeout without ever reaching a handler (no
// access-log line, no upstream request), and an honest caller is served
// meanwhile.
func TestHostileCallerSlowloris(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_HTTP_READ_HEADER_TIMEOUT": "1s"})
	addr := strings.TrimPrefix(st.gw.URL, "http://")
	st.emu.ResetRequests()
	before := accessLines(st.gw.Logs())
	const clients = 20
	closedAfter := make(chan time.Duration, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			start := time.Now()
			// The reader notices the server closing the connection.
			gone := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, conn)
				close(gone)
			}()
			_, _ = io.WriteString(conn, "POST /mcp/forgejo HTTP/1.1\r\nHost: "+addr+"\r\n")
			for i := 0; ; i++ {
				select {
				case <-gone:
					closedAfter <- time.Since(start)
					return
				case <-time.After(200 * time.Millisecond):
				}
				if time.Since(start) > 15*time.Second {
					closedAfter <- time.Since(start)
					return
				}
				// One header line at a time, never the blank line.
				_, _ = fmt.Fprintf(conn, "X-Slow-%d: %s\r\n", i, strings.Repeat("s", 10))
			}
		})
	}
	// An honest caller is served while the trickles go on.
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	if resp.StatusCode != 200 || time.Since(start) > 5*time.Second {
		t.Fatalf("honest caller during the slowloris: %d after %v: %s", resp.StatusCode, time.Since(start), out)
	}
	wg.Wait()
	close(closedAfter)
	for d := range closedAfter {
		if d > 5*time.Second {
			t.Errorf("a slowloris connection stayed open %v with a 1s read_header_timeout", d)
		}
	}
	// An access line is written after its answer: wait for the honest one's.
	eventually(t, "the honest request's access line", func() bool { return accessLines(st.gw.Logs()) > before })
	if n := accessLines(st.gw.Logs()) - before; n != 1 {
		t.Errorf("%d requests reached the handler chain, want only the honest one", n)
	}
	if n := len(st.emu.Requests()); n != 0 {
		t.Errorf("the emulator saw %d requests", n)
	}
}

// TestHostileCallerBodies: bodies of 1 MiB + 1, declared or chunked, are
// 413 on both endpoints before parsing or authentication; a batch, a
// non-object, deeply nested arguments and members smuggled by repetition
// are refused before any tool runs; a huge diff cursor is cursor_invalid.
func TestHostileCallerBodies(t *testing.T) {
	st := startForgejoStack(t, nil)
	st.emu.ResetRequests()
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":` + args + `}}`
	}
	pad := func(n int) string {
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		return msg + strings.Repeat(" ", n-len(msg))
	}
	for _, endpoint := range []string{"/mcp/forgejo", "/mcp/documents"} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s 1 MiB + 1, chunked %v", endpoint, chunked), func(t *testing.T) {
				var body io.Reader = strings.NewReader(pad(1<<20 + 1))
				if chunked {
					body = io.MultiReader(body) // hides the length: sent chunked
				}
				req, _ := http.NewRequest(http.MethodPost, st.gw.URL+endpoint, body)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				st.gw.Record(string(b))
				if resp.StatusCode != 413 || !strings.Contains(string(b), "body_too_large") {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
			})
		}
	}
	nested := func(depth int) string { return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth) }
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"batch", "[" + call(`{"owner":"demo","repo":"gateway"}`) + "]", 400, "batches are not supported"},
		{"batch of one notification", `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, 400, "batches"},
		{"arguments nested 1,000 deep", call(nested(1000)), 400, "too deep"},
		{"arguments nested 100,000 deep", call(nested(100000)), 400, "invalid_arguments"},
		// The envelope and params are two levels; 31 more make 33.
		{"nesting one over the bound", call(nested(31)), 400, "too deep"},
		{"repeated method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"get_repository"}}`, 400, "more than once"},
		{"case-folded params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{}},"PARAMS":{}}`, 400, "case"},
		{"trailing message", call(`{}`) + call(`{}`), 400, "single JSON object"},
		{"not JSON", "\x00\x01\x02", 400, "single JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", c.body, nil)
			st.gw.Record(out)
			if resp.StatusCode != c.status || !strings.Contains(out, c.want) {
				t.Fatalf("%d %.300s", resp.StatusCode, out)
			}
		})
	}
	s := st.gw.Connect(t, "/mcp/forgejo", st.demo.ReaderToken)
	for _, n := range []int{4097, 900 << 10} {
		out, isErr := callTool(t, s, "get_pull_request_diff", map[string]any{"owner": "demo", "repo": "gateway", "index": 1, "cursor": strings.Repeat("A", n)})
		if !isErr || errorCode(t, out) != "cursor_invalid" {
			t.Fatalf("a %d-byte cursor: %v", n, out)
		}
	}
	out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": map[string]any{"a": []any{[]any{[]any{"demo"}}}}, "repo": "gateway"})
	if !isErr || errorCode(t, out) != "invalid_arguments" {
		t.Fatalf("nested owner: %v", out)
	}
	if n := len(st.emu.Requests()); n != 0 {
		t.Fatalf("refused calls reached the emulator %d times", n)
	}
}

// hostileNames are owner or repository names a caller might use to reach
// another route, inject a header or pass for another repository.
var hostileNames = map[string]string{
	"CR LF header injection": "demo\r\nX-Injected: 1",
	"LF":                     "demo\nHost: evil.example",
	"encoded slash":          "demo%2Fgateway",
	"encoded slash, lower":   "demo%2fnotes",
	"encoded dot-dot":        "%2e%2e",
	"dot-dot":                "..",
	"dot":                    ".",
	"slash and dot-dot":      "demo/../notes",
	"backslash":              `demo\notes`,
	"NUL":                    "demo\x00",
	"encoded NUL":            "demo%00",
	"space":                  "demo gateway",
	"tab":                    "demo\t",
	"question mark":          "demo?x=1",
	"hash":                   "demo#x",
	"fullwidth look-alike":   "ｄｅｍｏ",
	"Cyrillic look-alike":    "dеmo",
	"division slash":         "demo\u2215gateway",
	"fullwidth solidus":      "demo\uff0fgateway",
	"right-to-left override": "demo\u202e",
	"zero-width space":       "de\u200bmo",
	"empty":                  "",
	"101 characters":         strings.Repeat("d", 101),
}

// TestHostileCallerNames: hostile owner and repository names are refused
// as invalid_arguments by every tool that takes them, before any request
// reaches Forgejo.
func TestHostileCallerNames(t *testing.T) {
	// Hundreds of refusals in a minute: budgets wide enough for them.
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "10000", "AGENT_GATEWAY_RATELIMIT_WRITE_PER_MINUTE": "10000"})
	s := st.gw.Connect(t, "/mcp/forgejo", st.demo.BotToken)
	digest := strings.Repeat("a", 64)
	key := "0f8fad5b-d9cb-469f-a165-70867728950e"
	tools := map[string]map[string]any{
		"get_repository":             {},
		"list_pull_requests":         {},
		"get_pull_request":           {"index": 1},
		"get_pull_request_diff":      {"index": 1},
		"get_agent_work_grant":       {"grant_id": 1},
		"confirm_agent_work_grant":   {"grant_id": 1, "proposal_schema": "agent_work_grant.v1", "proposal_version": 1, "proposal_digest": digest},
		"submit_agent_work_proposal": {"grant_id": 1, "proposal_schema": "agent_work_grant.v1", "proposal_version": 1, "proposal_digest": digest, "request_key": key, "title": "t", "body": "b"},
		"get_agent_work_submission":  {"grant_id": 1, "request_key": key},
	}
	st.emu.ResetRequests()
	for tool, base := range tools {
		for what, name := range hostileNames {
			for _, member := range []string{"owner", "repo"} {
				args := map[string]any{"owner": "demo", "repo": "gateway"}
				for k, v := range base {
					args[k] = v
				}
				args[member] = name
				out, isErr := callTool(t, s, tool, args)
				if !isErr || errorCode(t, out) != "invalid_arguments" {
					t.Errorf("%s with %s %s: %v", tool, member, what, out)
				}
			}
		}
	}
	for _, r := range st.emu.Requests() {
		t.Errorf("a refused call reached Forgejo: %s %s", r.Method, r.Path)
	}
}

// TestHostileCallerAdminPaths: the admin CLI refuses hostile document
// paths, owners and repository names, says which flag is wrong, and
// stores nothing.
func TestHostileCallerAdminPaths(t *testing.T) {
	s := &docStack{dbURL: storetest.SQLiteURL(t), dataDir: t.TempDir()}
	project := s.admin(t, "create-project", "--name", "hostile")["project_id"].(string)
	s.admin(t, "link-repository", "--project-id", project, "--github-owner", "octo", "--github-repository", "docs", "--installation-id", "7")
	commit := strings.Repeat("a", 40)
	add := func(owner, repo, path string) (int, string) {
		code, _, errs := s.runAdmin(t, "add-document-source", "--project-id", project, "--github-owner", owner,
			"--github-repository", repo, "--document-role", "reference", "--path", path, "--commit-sha", commit)
		return code, errs
	}
	paths := map[string]string{
		"dot-dot":              "../etc/passwd",
		"inner dot-dot":        "docs/../../x.md",
		"dot segment":          "docs/./x.md",
		"absolute":             "/etc/passwd",
		"backslash":            `docs\..\x.md`,
		"doubled slash":        "docs//x.md",
		"trailing slash":       "docs/",
		"CR LF":                "docs/a\r\nb.md",
		"LF":                   "docs/a\nAdded: source src_forged",
		"terminal escape":      "docs/\x1b[2Jx.md",
		"bidi override":        "docs/\u202egnp.md",
		"invalid UTF-8":        "docs/\xff.md",
		"only a dot-dot":       "..",
		"longer than 4096 B":   strings.Repeat("a/", 2049) + "x",
		"empty":                "",
		"dot-dot after a name": "docs/..",
	}
	for what, p := range paths {
		t.Run("path "+what, func(t *testing.T) {
			code, errs := add("octo", "docs", p)
			if code == 0 || !strings.Contains(errs, "path") {
				t.Fatalf("exit %d: %s", code, errs)
			}
		})
	}
	for what, name := range map[string]string{"owner CR LF": "octo\r\nx", "owner look-alike": "ｏｃｔｏ", "owner slash": "octo/../x", "owner encoded slash": "octo%2Fx"} {
		t.Run(what, func(t *testing.T) {
			if code, errs := add(name, "docs", "README.md"); code == 0 || !strings.Contains(errs, "owner") {
				t.Fatalf("exit %d: %s", code, errs)
			}
		})
	}
	for what, name := range map[string]string{"repository dot-dot": "..", "repository encoded slash": "docs%2Fx", "repository CR LF": "docs\r\n"} {
		t.Run(what, func(t *testing.T) {
			if code, errs := add("octo", name, "README.md"); code == 0 || !strings.Contains(errs, "repository") {
				t.Fatalf("exit %d: %s", code, errs)
			}
		})
	}
	if code, out, errs := s.runAdmin(t, "list-document-sources", "--project-id", project); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("refused sources were stored: exit %d %s %s", code, out, errs)
	}
}

// TestHostileCallerBrowsers: requests a hostile web page can make a
// browser send: cross-origin calls, a null origin, a preflight, and a
// rebinding DNS name in Host. None is served, none gets CORS permission.
func TestHostileCallerBrowsers(t *testing.T) {
	st := startForgejoStack(t, nil)
	st.emu.ResetRequests()
	addr := strings.TrimPrefix(st.gw.URL, "http://")
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"demo","repo":"gateway"}}}`
	cases := []struct {
		name    string
		method  string
		headers map[string]string
		host    string
		status  int
	}{
		{"cross-site POST", http.MethodPost, map[string]string{"Origin": "https://evil.example"}, "", 403},
		{"cross-site POST with the bearer", http.MethodPost, map[string]string{"Origin": "https://evil.example", "Authorization": "Bearer " + st.demo.ReaderToken}, "", 403},
		{"null origin (sandboxed iframe)", http.MethodPost, map[string]string{"Origin": "null"}, "", 403},
		{"origin of another port", http.MethodPost, map[string]string{"Origin": "http://127.0.0.1:1"}, "", 403},
		{"preflight", http.MethodOptions, map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "authorization, content-type"}, "", 0},
		{"DNS rebinding: hostile Host, own origin", http.MethodPost, map[string]string{"Origin": "http://evil.example:" + strings.Split(addr, ":")[1]}, "evil.example", 403},
		// Refused by the SDK's Host check (403) on the open endpoint, by
		// authentication (401) before it on the documents endpoint.
		{"DNS rebinding: hostile Host, no origin", http.MethodPost, nil, "evil.example", 0},
	}
	for _, endpoint := range []string{"/mcp/forgejo", "/mcp/documents"} {
		for _, c := range cases {
			t.Run(endpoint+" "+c.name, func(t *testing.T) {
				req, _ := http.NewRequest(c.method, st.gw.URL+endpoint, strings.NewReader(call))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range c.headers {
					req.Header.Set(k, v)
				}
				if c.host != "" {
					req.Host = c.host
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				st.gw.Record(string(b))
				if c.status != 0 && resp.StatusCode != c.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
				}
				if resp.StatusCode/100 == 2 {
					t.Fatalf("served: %d %s", resp.StatusCode, b)
				}
				for k := range resp.Header {
					if strings.HasPrefix(strings.ToLower(k), "access-control-allow") {
						t.Fatalf("CORS permission granted: %s: %v", k, resp.Header[k])
					}
				}
			})
		}
	}
	if n := len(st.emu.Requests()); n != 0 {
		t.Fatalf("browser requests reached Forgejo %d times", n)
	}
}

// TestHostileCallerQueryTokens: a token in the query string is refused
// however it is spelt, on both endpoints, before it is used, and it never
// reaches the log.
func TestHostileCallerQueryTokens(t *testing.T) {
	st := startForgejoStack(t, nil)
	st.emu.ResetRequests()
	canary := gatewaytest.NewCanaryToken("query-token")
	st.canaries.Add("a bearer sent in a query string", canary)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, endpoint := range []string{"/mcp/forgejo", "/mcp/documents"} {
		for _, q := range []string{"access_token=", "ACCESS_TOKEN=", "x=1;access_token=", "access%5Ftoken=", "%61ccess_token=", "x=1&Access_Token="} {
			t.Run(endpoint+"?"+q, func(t *testing.T) {
				resp, out := postRPC(t, st.gw.URL+endpoint+"?"+q+canary, list, nil)
				st.gw.Record(out)
				if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_request"`) {
					t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), out)
				}
			})
		}
	}
	if n := len(st.emu.Requests()); n != 0 {
		t.Fatalf("refused calls reached Forgejo %d times", n)
	}
	if logs := st.gw.Logs(); strings.Contains(logs, canary) {
		t.Fatal("the query token reached the log")
	}
}

// TestHostileCallerStolenCursor: a document cursor taken from project A is
// refused for project B's caller even with B's own allowlisted source for
// the very same file, and for A's other member; no GitHub read happens.
func TestHostileCallerStolenCursor(t *testing.T) {
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{})
	d := s.docs
	alice := s.session(t, s.tokenA)
	out, isErr := callTool(t, alice, "git_document_get", map[string]any{"source_id": s.sources[d.Runtime], "max_bytes": 1024})
	if isErr {
		t.Fatal(out)
	}
	cursor := out["next_cursor"].(string)
	projectB := s.admin(t, "create-project", "--name", "project-b")["project_id"].(string)
	s.admin(t, "add-member", "--project-id", projectB, "--subject", "mallory")
	s.admin(t, "link-repository", "--project-id", projectB, "--github-owner", docsOwner, "--github-repository", docsRepo,
		"--installation-id", fmt.Sprint(installationID))
	srcB := s.addSource(t, projectB, "runtime", d.Runtime, "--commit-sha", d.Commit)
	mallory := s.session(t, s.consent(t, projectB, "mallory", "documents:read"))
	s.admin(t, "add-member", "--project-id", s.projectA, "--subject", "bob")
	bob := s.session(t, s.consent(t, s.projectA, "bob", "documents:read"))
	before := s.emu.ContentsRequests()
	cases := []struct {
		name string
		who  *mcp.ClientSession
		args map[string]any
		code string
	}{
		{"B with A's source ID", mallory, map[string]any{"source_id": s.sources[d.Runtime], "cursor": cursor}, "cursor_invalid"},
		{"B with its own source of the same file", mallory, map[string]any{"source_id": srcB, "cursor": cursor}, "cursor_invalid"},
		{"A's other member", bob, map[string]any{"source_id": s.sources[d.Runtime], "cursor": cursor}, "cursor_invalid"},
		{"B reading A's source ID", mallory, map[string]any{"source_id": s.sources[d.Runtime]}, "not_found"},
		{"two halves spliced", alice, map[string]any{"source_id": s.sources[d.Runtime], "cursor": cursor[len(cursor)/2:] + cursor[:len(cursor)/2]}, "cursor_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out, isErr := callTool(t, c.who, "git_document_get", c.args); !isErr || errorCode(t, out) != c.code {
				t.Fatalf("got %v, want %s", out, c.code)
			}
		})
	}
	if n := s.emu.ContentsRequests() - before; n != 0 {
		t.Fatalf("refused reads reached GitHub %d times", n)
	}
	// The cursor still works for the caller it was issued to.
	if out, isErr := callTool(t, alice, "git_document_get", map[string]any{"source_id": s.sources[d.Runtime], "cursor": cursor}); isErr {
		t.Fatalf("the genuine cursor: %v", out)
	}
}
