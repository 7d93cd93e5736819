package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
)

func TestDiffToken(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, env, file, want, err string
	}{
		{name: "the environment", env: "tok-env", want: "tok-env"},
		{name: "a file, trimmed", file: file("a", "  tok-file\n"), want: "tok-file"},
		{name: "the file wins over the environment", env: "tok-env", file: file("b", "tok-file"), want: "tok-file"},
		{name: "nothing", err: "no token"},
		{name: "an empty file", env: "tok-env", file: file("c", "\n"), err: "no token"},
		{name: "a missing file", file: filepath.Join(dir, "none"), err: "token file"},
		{name: "a file over the bound", file: file("d", strings.Repeat("x", maxSecretFileBytes+1)), err: "over"},
		{name: "two words", env: "tok en", err: "whitespace or control"},
		{name: "a control character", file: file("e", "tok\x00en"), err: "whitespace or control"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(diffTokenEnv, c.env)
			got, err := diffToken(c.file)
			if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("diffToken = %q, %v; want %q, %q", got, err, c.want, c.err)
			}
			if err != nil && c.env != "" && strings.Contains(err.Error(), c.env) {
				t.Fatal("the error quotes the token")
			}
		})
	}
}

func TestDiffFailureCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{&diffread.VerificationError{Page: 2, Check: diffread.CheckChunkSHA256}, diffExitUnverified},
		{fmt.Errorf("wrapped: %w", &diffread.StaleError{Page: 2}), diffExitUnverified},
		{&diffread.BoundError{Page: 1, Bound: diffread.BoundStrict}, diffExitRefused},
		{&diffread.BoundError{Page: 0, Bound: diffread.BoundIdle}, diffExitRefused},
		{&diffread.ToolError{Code: "not_found"}, diffExitUpstream},
		{&diffread.CallError{Err: errors.New("refused")}, diffExitUpstream},
		{errors.New("write the diff: disk full"), diffExitUpstream},
	} {
		var stderr bytes.Buffer
		if got := diffFailure(&stderr, c.err, "out.diff", false); got != c.code || !strings.Contains(stderr.String(), "nothing was written to out.diff") {
			t.Fatalf("%v: exit %d, %s", c.err, got, stderr.String())
		}
	}
}

// TestDiffProgress draws the bar a terminal would get (pages, bytes) into
// a buffer, and draws nothing when stderr is not a terminal.
func TestDiffProgress(t *testing.T) {
	if newDiffProgress(&bytes.Buffer{}) != nil {
		t.Fatal("a progress bar on a stderr that is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newDiffProgress(f) != nil {
		t.Fatal("a progress bar on a file")
	}
	var buf bytes.Buffer
	d := &diffProgress{w: &buf}
	diff := bytes.Repeat([]byte("+line\n"), 20000)
	s := diffreadtest.Start(t, diffreadtest.Options{Owner: "o", Repo: "r", Index: 1, Diff: diffreadtest.Bytes(diff)})
	res, err := diffread.Read(context.Background(), diffread.Options{Endpoint: s.URL, Progress: d.update},
		diffread.Target{Owner: "o", Repo: "r", Index: 1}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	d.finish()
	if res.Pages < 4 || !strings.Contains(buf.String(), fmt.Sprintf("verified page %d", res.Pages)) || !strings.Contains(buf.String(), "120 kB") {
		t.Fatalf("%d pages drew %q", res.Pages, buf.String())
	}
}

// TestDiffFailureHints: a refusal at a bound the command line sets says
// which flag to change.
func TestDiffFailureHints(t *testing.T) {
	for b, flag := range map[diffread.Bound]string{diffread.BoundIdle: "--timeout", diffread.BoundMaxBytes: "--max-bytes"} {
		var stderr bytes.Buffer
		diffFailure(&stderr, &diffread.BoundError{Page: 1, Bound: b, Detail: "x"}, "", false)
		if !strings.Contains(stderr.String(), flag) {
			t.Fatalf("%s: %s", b, stderr.String())
		}
	}
}

// TestDiffFailureEscapesFormatCharacters: a hostile endpoint's bidi
// overrides, isolates and zero-width characters (Unicode Cf) reach stderr
// as escapes, so its message cannot reorder or hide what is printed.
func TestDiffFailureEscapesFormatCharacters(t *testing.T) {
	var stderr bytes.Buffer
	diffFailure(&stderr, &diffread.ToolError{Page: 1, Code: "x", Message: "ok \u202egnp.exe\u202c \u2066a\u2069 z\u200bw \U000e0041"}, "", true)
	out := stderr.String()
	for _, r := range out {
		if unicode.Is(unicode.Cf, r) {
			t.Fatalf("format character %U reached stderr: %q", r, out)
		}
	}
	for _, want := range []string{`\u202egnp.exe\u202c`, `\u2066a\u2069`, `z\u200bw`, `\U000e0041`} {
		if !strings.Contains(out, want) {
			t.Fatalf("stderr %q lacks %s", out, want)
		}
	}
}

func TestDiffFailureIsPrintable(t *testing.T) {
	var stderr bytes.Buffer
	diffFailure(&stderr, &diffread.ToolError{Page: 1, Code: "x\x1b]0;owned\x07", Message: "line\nbreak \u2028 \xff"}, "", true)
	out := strings.TrimSuffix(stderr.String(), "\n")
	for _, r := range out {
		if r != '\n' && (r < ' ' || r == 0x7f || r == '\u2028' || r == 0xfffd) {
			t.Fatalf("a control character %U reached stderr: %q", r, out)
		}
	}
	if !strings.Contains(out, `x\u001b]0;owned\u0007`) || !strings.Contains(out, `line\u000abreak`) {
		t.Fatalf("stderr %q", out)
	}
}
