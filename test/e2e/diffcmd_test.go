package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// diffRun is the outcome of one `agent-gateway diff` process.
type diffRun struct {
	stdout, stderr []byte
	code           int
}

// runDiffCommand runs the real binary's diff command with env added to a
// clean environment (no AGENT_GATEWAY_TOKEN of the test's own).
func runDiffCommand(t testing.TB, bin string, env []string, args ...string) diffRun {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"diff"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENT_GATEWAY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("agent-gateway diff %v did not end", args)
	}
	run := diffRun{stdout: stdout.Bytes(), stderr: stderr.Bytes(), code: exitCode(t, err)}
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Fatalf("data race in agent-gateway diff:\n%s", stderr.String())
	}
	return run
}

// writeTokenFile writes a token file for the diff command.
func writeTokenFile(t testing.TB, token string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// dirNames lists a directory, to show nothing (not even a temporary file)
// was left in it.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestDiffCommand runs `agent-gateway diff` (the real binary) against the
// real gateway binary in front of the Core emulator, on a private pull
// request whose diff takes several pages and has binary files, a non-UTF-8
// path and non-UTF-8 text: what it prints is, byte for byte, git diff -p
// --binary --histogram of the same inputs run separately; -o puts the same
// bytes in a file and nothing else beside it; --manifest prints the
// verified manifest; stderr stays quiet when it is not a terminal.
func TestDiffCommand(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	p := addPullWithFiles(t, st.emu, d.Owner, d.PrivateRepo, "topic/cli", mixedFiles())
	want := gitDiff(t, st.emu, d.Owner, d.PrivateRepo, p)
	bin := gatewaytest.Binary(t)
	endpoint := st.gw.URL + "/mcp/forgejo"
	pr := d.Owner + "/" + d.PrivateRepo + "#" + strconv.FormatInt(p.Index(), 10)
	tokenFile := writeTokenFile(t, d.ReaderToken)

	st.emu.ResetRequests()
	run := runDiffCommand(t, bin, nil, "--endpoint", endpoint, "--token-file", tokenFile, pr)
	if run.code != 0 || len(run.stderr) != 0 {
		t.Fatalf("exit %d: %s", run.code, run.stderr)
	}
	if !bytes.Equal(run.stdout, want) {
		t.Fatalf("stdout: %d bytes differ from git's %d", len(run.stdout), len(want))
	}
	pages := len(st.emu.Requests())
	if pages < 4 {
		t.Fatalf("%d pages: the test diff no longer spans several pages", pages)
	}
	t.Logf("%d-byte diff verified from %d pages", len(want), pages)

	t.Run("-o and the token from the environment", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "pr.diff")
		run := runDiffCommand(t, bin, []string{"AGENT_GATEWAY_TOKEN=" + d.ReaderToken}, "--endpoint", endpoint, "-o", out, pr)
		got, err := os.ReadFile(out)
		if run.code != 0 || err != nil || !bytes.Equal(got, want) || len(run.stdout) != 0 || len(run.stderr) != 0 {
			t.Fatalf("exit %d, %v, %d bytes: %s", run.code, err, len(got), run.stderr)
		}
		if names := dirNames(t, dir); len(names) != 1 {
			t.Fatalf("left beside the output: %v", names)
		}
	})
	t.Run("--manifest, flags after the pull request", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "pr.diff")
		run := runDiffCommand(t, bin, nil, pr, "--manifest", "--endpoint", endpoint, "--token-file", tokenFile, "-o", out)
		if run.code != 0 {
			t.Fatalf("exit %d: %s", run.code, run.stderr)
		}
		var m struct {
			Repository struct{ Owner, Name string }
			Generation struct {
				Base struct{ OID string }
				Head struct{ OID, Ref string }
			}
			Content struct {
				ByteCount int64  `json:"byte_count"`
				SHA256    string `json:"sha256"`
			}
		}
		if err := json.Unmarshal(run.stdout, &m); err != nil {
			t.Fatalf("manifest: %v\n%s", err, run.stdout)
		}
		sum := sha256.Sum256(want)
		if m.Content.ByteCount != int64(len(want)) || m.Content.SHA256 != hex.EncodeToString(sum[:]) ||
			m.Generation.Base.OID != p.MergeBase() || m.Generation.Head.Ref != p.HeadRef() || m.Repository.Name != d.PrivateRepo {
			t.Fatalf("manifest %+v", m)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
			t.Fatal("the diff beside --manifest differs")
		}
		// Read as jq or Python would (exact names, plain maps), the printed
		// manifest names the very sha256 the bytes were verified against.
		if got := plainSHA256(t, run.stdout); got != hex.EncodeToString(sum[:]) {
			t.Fatalf("a plain reading of the manifest finds content.sha256 %q", got)
		}
	})
	t.Run("upstream and usage failures", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "pr.diff")
		for _, c := range []struct {
			name string
			env  []string
			args []string
			code int
			says string
		}{
			{"no such pull request", nil, []string{"--endpoint", endpoint, "--token-file", tokenFile, "-o", out, d.Owner + "/" + d.PrivateRepo + "#999"}, 3, "not_found"},
			{"a token Forgejo does not know", []string{"AGENT_GATEWAY_TOKEN=not-a-token"}, []string{"--endpoint", endpoint, "-o", out, pr}, 3, "upstream_unauthorized"},
			{"no endpoint listening", nil, []string{"--endpoint", "http://" + gatewaytest.FreeAddr(t) + "/mcp/forgejo", "--token-file", tokenFile, "-o", out, pr}, 3, "connect"},
			{"no token", nil, []string{"--endpoint", endpoint, "-o", out, pr}, 2, "no token"},
			{"an empty token file", nil, []string{"--endpoint", endpoint, "--token-file", writeTokenFile(t, " "), pr}, 2, "no token"},
			{"a token flag", nil, []string{"--endpoint", endpoint, "--token", d.ReaderToken, pr}, 2, "not defined"},
			{"no pull request", nil, []string{"--endpoint", endpoint, "--token-file", tokenFile}, 2, "exactly one pull request"},
			{"two pull requests", nil, []string{"--token-file", tokenFile, pr, pr}, 2, "exactly one pull request"},
			{"a malformed pull request", nil, []string{"--token-file", tokenFile, "demo/gateway"}, 2, "owner/repo#index"},
			{"plain http to another host", nil, []string{"--endpoint", "http://example.test/mcp/forgejo", "--token-file", tokenFile, pr}, 2, "loopback"},
		} {
			t.Run(c.name, func(t *testing.T) {
				run := runDiffCommand(t, bin, c.env, c.args...)
				if run.code != c.code || !strings.Contains(string(run.stderr), c.says) || len(run.stdout) != 0 {
					t.Fatalf("exit %d (want %d), stdout %d bytes, stderr: %s", run.code, c.code, len(run.stdout), run.stderr)
				}
				if strings.Contains(string(run.stderr), d.ReaderToken) {
					t.Fatal("the token is in the error output")
				}
				if names := dirNames(t, dir); len(names) != 0 {
					t.Fatalf("left in the output directory: %v", names)
				}
			})
		}
	})
}

// TestDiffCommandRefusals: every refusal of the reader exits 1 and leaves
// nothing at -o (nor a temporary file beside it). Forged pages come from
// an MCP server in the test (the go-sdk server of diffreadtest); the moved
// pull request is a real push between two pages read through the real
// gateway.
func TestDiffCommandRefusals(t *testing.T) {
	bin := gatewaytest.Binary(t)
	diff := bytes.Repeat([]byte("+forged line \xff of a diff\n"), 4000) // 100,000 bytes: 4 pages
	o := diffreadtest.Options{Owner: "team", Repo: "project", Index: 7, Diff: diffreadtest.Bytes(diff), Token: "hostile-test-token"}
	tokenFile := writeTokenFile(t, o.Token)
	on := func(page int, f func(p *diffreadtest.ServedPage) *diffreadtest.ToolError) func(int, *diffreadtest.ServedPage) *diffreadtest.ToolError {
		return func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			if n == page {
				return f(p)
			}
			return nil
		}
	}
	for _, c := range []struct {
		name string
		edit func(int, *diffreadtest.ServedPage) *diffreadtest.ToolError
		says string
	}{
		{"a tampered page", on(2, func(p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			p.Data = "AAAA" + p.Data[4:] // chunk_sha256 kept: only the hash tells
			p.Text = nil
			return nil
		}), "page 2 at byte 32768: chunk_sha256"},
		{"a wrong final hash", func(_ int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			p.Manifest["content"].(map[string]any)["sha256"] = strings.Repeat("0", 64)
			return nil
		}, "page 4 at byte 100000: sha256"},
		{"a moved pull request", on(2, func(p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			return &diffreadtest.ToolError{Code: "cursor_stale", Message: "moved"}
		}), "the pull request moved; start again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := o
			o.Edit = c.edit
			s := diffreadtest.Start(t, o)
			dir := t.TempDir()
			out := filepath.Join(dir, "pr.diff")
			run := runDiffCommand(t, bin, nil, "--endpoint", s.URL, "--token-file", tokenFile, "-o", out, "team/project#7")
			if run.code != 1 || !strings.Contains(string(run.stderr), c.says) {
				t.Fatalf("exit %d, stderr: %s", run.code, run.stderr)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Fatalf("left at -o: %v", names)
			}
			t.Logf("%s", bytes.TrimSpace(run.stderr))
		})
	}
	t.Run("to stdout, a refusal says to discard it", func(t *testing.T) {
		o := o
		o.Edit = on(3, func(p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			p.ChunkSHA256 = strings.Repeat("1", 64)
			return nil
		})
		s := diffreadtest.Start(t, o)
		run := runDiffCommand(t, bin, nil, "--endpoint", s.URL, "--token-file", tokenFile, "team/project#7")
		if run.code != 1 || !bytes.Equal(run.stdout, diff[:2*32768]) || !strings.Contains(string(run.stderr), "NOT verified") {
			t.Fatalf("exit %d, %d bytes out, stderr: %s", run.code, len(run.stdout), run.stderr)
		}
	})

	t.Run("an endpoint's bidi and invisible characters are escaped on stderr", func(t *testing.T) {
		o := o
		o.Edit = on(1, func(*diffreadtest.ServedPage) *diffreadtest.ToolError {
			return &diffreadtest.ToolError{Code: "not_found", Message: "see \u202egnp.exe\u202c \u2066ok\u2069 z\u200bw"}
		})
		s := diffreadtest.Start(t, o)
		run := runDiffCommand(t, bin, nil, "--endpoint", s.URL, "--token-file", tokenFile, "team/project#7")
		if run.code == 0 || !strings.Contains(string(run.stderr), `see \u202egnp.exe\u202c \u2066ok\u2069 z\u200bw`) {
			t.Fatalf("exit %d, stderr: %q", run.code, run.stderr)
		}
		for _, r := range string(run.stderr) {
			if unicode.Is(unicode.Cf, r) {
				t.Fatalf("format character %U reached stderr: %q", r, run.stderr)
			}
		}
	})

	t.Run("a push between two pages through the real gateway", func(t *testing.T) {
		st := startForgejoStack(t, nil)
		d := st.demo
		p := addPullWithFiles(t, st.emu, d.Owner, d.PublicRepo, "topic/moving", mixedFiles())
		repo, _ := st.emu.Repo(d.Owner, d.PublicRepo)
		var once sync.Once
		proxy := afterFirstDiffPage(t, st.gw.URL, func() {
			once.Do(func() {
				if _, err := repo.Commit("topic/moving", map[string][]byte{"late.txt": []byte("pushed between pages\n")}, nil, "late push"); err != nil {
					t.Error(err)
				}
				if err := st.emu.UpdatePullHead(d.Owner, d.PublicRepo, p.Index()); err != nil {
					t.Error(err)
				}
			})
		})
		dir := t.TempDir()
		out := filepath.Join(dir, "pr.diff")
		pr := d.Owner + "/" + d.PublicRepo + "#" + strconv.FormatInt(p.Index(), 10)
		run := runDiffCommand(t, bin, []string{"AGENT_GATEWAY_TOKEN=" + d.ReaderToken}, "--endpoint", proxy+"/mcp/forgejo", "-o", out, pr)
		if run.code != 1 || !strings.Contains(string(run.stderr), "the pull request moved; start again (cursor_stale on page 2") {
			t.Fatalf("exit %d, stderr: %s", run.code, run.stderr)
		}
		if names := dirNames(t, dir); len(names) != 0 {
			t.Fatalf("left at -o: %v", names)
		}
		// Starting again reads the new diff whole.
		run = runDiffCommand(t, bin, []string{"AGENT_GATEWAY_TOKEN=" + d.ReaderToken}, "--endpoint", proxy+"/mcp/forgejo", "-o", out, pr)
		got, _ := os.ReadFile(out)
		if run.code != 0 || !bytes.Equal(got, gitDiff(t, st.emu, d.Owner, d.PublicRepo, p)) || !bytes.Contains(got, []byte("pushed between pages")) {
			t.Fatalf("restart: exit %d, %d bytes: %s", run.code, len(got), run.stderr)
		}
	})
}

// plainSHA256 reads content.sha256 from a printed manifest as jq or Python
// would: exact member names, the last of a repeated one.
func plainSHA256(t testing.TB, manifest []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("the manifest: %v\n%s", err, manifest)
	}
	content, _ := m["content"].(map[string]any)
	sum, _ := content["sha256"].(string)
	return sum
}

// TestDiffCommandBounds: an endpoint that breaks the reader's bounds —
// pages a JSON reader other than Go's would read differently, a response
// over the 49,000-byte envelope, offsets that do not advance, a diff over
// --max-bytes, no bytes for --timeout — makes the real binary exit 2 with
// a message naming the page and the bound, print nothing as verified and
// leave nothing at -o; at each bound's edge it reads the diff whole.
func TestDiffCommandBounds(t *testing.T) {
	bin := gatewaytest.Binary(t)
	diff := bytes.Repeat([]byte("+forged line \xff of a diff\n"), 4000) // 100,000 bytes: 4 data-only pages
	o := diffreadtest.Options{Owner: "team", Repo: "project", Index: 7, Diff: diffreadtest.Bytes(diff), Token: "hostile-test-token"}
	tokenFile := writeTokenFile(t, o.Token)
	sum := sha256.Sum256(diff)
	honestContent := `"content":{"byte_count":100000,"encoding":"base64","media_type":"text/x-diff","sha256":"` + hex.EncodeToString(sum[:]) + `"}`
	fake := strings.Replace(honestContent, hex.EncodeToString(sum[:]), strings.Repeat("0", 64), 1)
	rewrite := func(to string) func(int, string) string {
		return func(n int, text string) string {
			if !strings.Contains(text, honestContent) {
				t.Errorf("page %d has no %s", n, honestContent)
			}
			return strings.Replace(text, honestContent, to, 1)
		}
	}
	var stalls atomic.Int32
	deliver := func(page int, f func(w http.ResponseWriter, r *http.Request, answer []byte)) func(http.ResponseWriter, *http.Request, string, int, []byte) {
		var calls atomic.Int32
		return func(w http.ResponseWriter, r *http.Request, method string, status int, answer []byte) {
			if method == "tools/call" && calls.Add(1) == int32(page) {
				f(w, r, answer)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			w.WriteHeader(status)
			w.Write(answer)
		}
	}
	padTo := func(size int) func(http.ResponseWriter, *http.Request, []byte) {
		return func(w http.ResponseWriter, r *http.Request, answer []byte) {
			if len(answer) > size {
				t.Errorf("an answer of %d bytes cannot be padded to %d", len(answer), size)
			}
			w.WriteHeader(http.StatusOK)
			w.Write(append(answer, bytes.Repeat([]byte(" "), size-len(answer))...))
		}
	}
	stall := func(w http.ResponseWriter, r *http.Request, answer []byte) {
		stalls.Add(1)
		w.WriteHeader(http.StatusOK)
		w.Write(answer[:len(answer)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	trickle := func(w http.ResponseWriter, r *http.Request, answer []byte) {
		w.WriteHeader(http.StatusOK)
		const pieces = 40 // 4 s in all, pauses of 100 ms under a 3 s --timeout
		for i := range pieces {
			w.Write(answer[i*len(answer)/pieces : (i+1)*len(answer)/pieces])
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, c := range []struct {
		name    string
		flags   []string
		rewrite func(int, string) string
		deliver func(http.ResponseWriter, *http.Request, string, int, []byte)
		edit    func(int, *diffreadtest.ServedPage) *diffreadtest.ToolError
		says    string // empty: the diff verifies
	}{
		{name: "Content beside content", rewrite: rewrite(fake + "," + strings.Replace(honestContent, "content", "Content", 1)),
			says: `refused page 1 at byte 0: strict: the page: member "Content" repeats another in a different letter case`},
		{name: "content twice", rewrite: rewrite(fake + "," + honestContent),
			says: `refused page 1 at byte 0: strict: the page: member "content" appears twice in one object`},
		{name: "sha256 in another case within content", rewrite: rewrite(strings.Replace(fake, `}`, `,"SHA256":"`+hex.EncodeToString(sum[:])+`"}`, 1)),
			says: `refused page 1 at byte 0: strict: the page: member "SHA256" repeats another in a different letter case`},
		{name: "a response one byte over the envelope", deliver: deliver(2, padTo(49001)),
			says: "refused page 2 at byte 32768: envelope: a response over the 49000-byte envelope"},
		{name: "a response of exactly the envelope", deliver: deliver(2, padTo(49000))},
		{name: "a gap in offsets", edit: func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			if n == 3 {
				*p = *diffreadtest.NewServedPage(o, p.ByteOffset+1)
			}
			return nil
		}, says: "refused page 3 at byte 65536: progress: byte_offset 65537, where the previous page ended at 65536"},
		{name: "a diff over --max-bytes", flags: []string{"--max-bytes", "99999"},
			says: "refused page 1 at byte 0: max_bytes: the diff has 100000 bytes (manifest.content.byte_count), over the limit of 99999"},
		{name: "a diff of exactly --max-bytes", flags: []string{"--max-bytes", "100000"}},
		{name: "no bytes for --timeout", flags: []string{"--timeout", "1s"}, deliver: deliver(2, stall),
			says: "refused page 2 at byte 32768: idle: no bytes for 1s"},
		{name: "a page that trickles in for longer than --timeout", flags: []string{"--timeout", "3s"}, deliver: deliver(1, trickle)},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := o
			o.Rewrite, o.Deliver, o.Edit = c.rewrite, c.deliver, c.edit
			s := diffreadtest.Start(t, o)
			dir := t.TempDir()
			out := filepath.Join(dir, "pr.diff")
			args := append([]string{"--endpoint", s.URL, "--token-file", tokenFile, "-o", out, "--manifest"}, c.flags...)
			run := runDiffCommand(t, bin, nil, append(args, "team/project#7")...)
			if c.says == "" {
				got, err := os.ReadFile(out)
				if run.code != 0 || err != nil || !bytes.Equal(got, diff) || plainSHA256(t, run.stdout) != hex.EncodeToString(sum[:]) {
					t.Fatalf("exit %d, %v, %d bytes: %s", run.code, err, len(got), run.stderr)
				}
				return
			}
			if run.code == 0 {
				t.Errorf("exit 0: verified against %s, while a plain reading of the printed manifest finds %q",
					hex.EncodeToString(sum[:]), plainSHA256(t, run.stdout))
			}
			if run.code != 2 || !strings.Contains(string(run.stderr), c.says) || len(run.stdout) != 0 {
				t.Fatalf("exit %d, %d bytes on stdout, stderr: %s", run.code, len(run.stdout), run.stderr)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Fatalf("left at -o: %v", names)
			}
			t.Logf("%s", bytes.TrimSpace(run.stderr))
		})
	}
	if stalls.Load() == 0 {
		t.Error("no page stalled: the --timeout case did not reach page 2")
	}
	t.Run("flags out of range", func(t *testing.T) {
		for _, c := range []struct{ flag, value, says string }{
			{"--timeout", "0s", "--timeout 0s: want a positive duration"},
			{"--timeout", "soon", "invalid value"},
			{"--max-bytes", "-1", "--max-bytes -1: want 0 (no limit) or a positive number"},
		} {
			run := runDiffCommand(t, bin, nil, "--token-file", tokenFile, c.flag, c.value, "team/project#7")
			if run.code != 2 || !strings.Contains(string(run.stderr), c.says) {
				t.Fatalf("%s %s: exit %d: %s", c.flag, c.value, run.code, run.stderr)
			}
		}
	})
}

// afterFirstDiffPage is a loopback proxy to the gateway that runs moved
// once the gateway answered the first get_pull_request_diff call, before
// the answer is passed on: the pull request moves between pages 1 and 2.
func afterFirstDiffPage(t *testing.T, gateway string, moved func()) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, gateway+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(diffTool)) {
			moved()
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// TestDemoDiffCommand runs `agent-gateway demo`, then exactly the commands
// its banner prints for the verified diff — the token export, `diff` run
// by the demo binary itself (never `go run .`, which turns diff's exit
// codes into 1) into pr1.diff, the clone at the merge base and `git apply
// --check` — in a scratch directory.
func TestDemoDiffCommand(t *testing.T) {
	bin := gatewaytest.DemoBinary(t)
	addr := gatewaytest.FreeAddr(t)
	var script []string
	for _, line := range startDemoBanner(t, addr) {
		line = strings.TrimSpace(line)
		if len(script) > 0 || strings.HasPrefix(line, "export AGENT_GATEWAY_TOKEN=") {
			script = append(script, line)
		}
		if len(script) == 4 {
			break
		}
	}
	if len(script) < 4 {
		t.Fatalf("the demo printed no diff commands: %q", script)
	}
	if !strings.HasPrefix(script[1], bin+" diff --endpoint http://"+addr+"/mcp/forgejo demo/gateway#1 > pr1.diff") ||
		!strings.Contains(script[3], "apply --check ../pr1.diff") {
		t.Fatalf("the banner's commands changed:\n%s", strings.Join(script, "\n"))
	}
	// The printed lines run in a shell, as printed.
	dir := t.TempDir()
	sh := strings.Join(script, "\n")
	run := exec.Command("sh", "-e", "-c", sh)
	run.Dir = dir
	run.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the verified diff applies") {
		t.Fatalf("the banner's commands: %v\n%s\n%s", err, sh, out)
	}
	diff, err := os.ReadFile(filepath.Join(dir, "pr1.diff"))
	if err != nil || !bytes.Contains(diff, []byte("GIT binary patch")) {
		t.Fatalf("pr1.diff: %v, %d bytes without a binary patch", err, len(diff))
	}
}
