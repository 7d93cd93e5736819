package github

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/fuzzseed"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// contentsSeedPaths are the emulator's documents whose Contents answers
// seed FuzzContentsJSON: every kind of object (file, odd path, empty,
// directory, symlinks, submodule, non-UTF-8, over 1 MiB) but the two
// large files, whose answers would bloat the corpus without new shapes.
func contentsSeedPaths(d *githubemu.Docs) map[string]string {
	return map[string]string{
		"emu-readme": d.Readme, "emu-odd-path": d.Odd, "emu-empty": d.Empty, "emu-dir": d.Dir,
		"emu-symlink-to-file": d.LinkToFile, "emu-symlink-outside": d.LinkOutside, "emu-submodule": d.Submodule,
		"emu-not-utf8": d.NotUTF8, "emu-too-large": d.TooLarge,
	}
}

// contentsFaults are the emulator's fault switches whose bodies seed the
// corpus; FaultHugeBody is shrunk to a few hundred bytes.
var contentsFaults = map[string]githubemu.Fault{
	"emu-fault-malformed":  {Kind: githubemu.FaultMalformedJSON},
	"emu-fault-huge-body":  {Kind: githubemu.FaultHugeBody, Size: 300},
	"emu-fault-gzip":       {Kind: githubemu.FaultGzip},
	"emu-fault-status-500": {Kind: githubemu.FaultStatus},
}

// hostileContentsVariants are byte-level attacks on a genuine file answer.
func hostileContentsVariants(body []byte, path string) map[string][]byte {
	b := string(bytes.TrimSpace(body))
	inner := b[1:]
	return map[string][]byte{
		// encoding/json matches members without regard to case and keeps
		// the last of repeated ones: each of these reads differently to an
		// exact reader.
		"hostile-case-folded-path":  []byte(strings.Replace(b, `"path":`, `"path":"elsewhere.md","PATH":`, 1)),
		"hostile-case-folded-type":  []byte(`{"TYPE":"symlink",` + inner),
		"hostile-duplicate-content": []byte(strings.TrimSuffix(b, "}") + `,"content":""}`),
		"hostile-duplicate-path":    []byte(`{"path":"other",` + inner),
		"hostile-nul-in-path":       []byte(strings.Replace(b, `"path":"`, `"path":"\u0000`, 1)),
		"hostile-huge-size":         []byte(strings.Replace(b, `"size":`, `"size":1`+strings.Repeat("0", 300)+`,"x":`, 1)),
		"hostile-negative-size":     []byte(strings.Replace(b, `"size":`, `"size":-1,"y":`, 1)),
		"hostile-nesting":           []byte(`{"type":"dir","entries":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`),
		"hostile-lone-surrogate":    []byte(strings.Replace(b, `"path":"`, `"path":"\udc00`, 1)),
		"hostile-trailing":          []byte(b + `{"type":"file"}`),
		"hostile-url-alphabet":      []byte(strings.NewReplacer("+", "-", "/", "_").Replace(b)),
		"hostile-path-suffix":       []byte(strings.Replace(b, `"path":"`+path+`"`, `"path":"`+path+`/"`, 1)),
	}
}

var tokenSeedNames = []string{"emu-token", "emu-fault-malformed", "emu-fault-status-401", "hostile-token-crlf",
	"hostile-token-expired", "hostile-token-huge", "hostile-token-case-folded"}

// TestFuzzSeedsFromEmulator keeps the corpora of FuzzContentsJSON and
// FuzzTokenAnswer: answers captured from the GitHub emulator (every kind
// of Contents object, its fault switches, the token route) and byte-level
// attacks on them. UPDATE_FUZZ_SEEDS=1 captures them again (needs git).
func TestFuzzSeedsFromEmulator(t *testing.T) {
	var contents, tokens []fuzzseed.Seed
	if fuzzseed.Updating() {
		contents, tokens = captureSeeds(t)
	} else {
		for name := range contentsSeedPaths(&githubemu.Docs{}) {
			contents = append(contents, fuzzseed.Seed{Name: name, Live: true})
		}
		for name := range contentsFaults {
			contents = append(contents, fuzzseed.Seed{Name: name, Live: true})
		}
		for name := range hostileContentsVariants([]byte("{}"), "") {
			contents = append(contents, fuzzseed.Seed{Name: name, Live: true})
		}
		for _, name := range tokenSeedNames {
			tokens = append(tokens, fuzzseed.Seed{Name: name, Live: true})
		}
	}
	fuzzseed.Sync(t, "FuzzContentsJSON", contents)
	fuzzseed.Sync(t, "FuzzTokenAnswer", tokens)
}

func captureSeeds(t *testing.T) (contents, tokens []fuzzseed.Seed) {
	s := newStack(t, githubemu.Options{}, true)
	tok, err := s.tokens.Token(context.Background(), s.docs.InstallationID, s.docs.Repo)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) []byte {
		req, _ := s.client.up.NewRequest(context.Background(), http.MethodGet, map[string][]string{"ref": {s.docs.Commit}}, nil,
			routeContents.Segments("octo", "docs", path)...)
		req.Header.Set("Accept", ObjectMediaType)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	for name, p := range contentsSeedPaths(s.docs) {
		contents = append(contents, fuzzseed.Seed{Name: name, Values: []any{get(p), p}, Live: true})
	}
	for name, f := range contentsFaults {
		s.emu.SetFault(githubemu.RouteContents, f)
		contents = append(contents, fuzzseed.Seed{Name: name, Values: []any{get(s.docs.Readme), s.docs.Readme}, Live: true})
		s.emu.ClearFaults()
	}
	for name, b := range hostileContentsVariants(get(s.docs.Readme), s.docs.Readme) {
		contents = append(contents, fuzzseed.Seed{Name: name, Values: []any{b, s.docs.Readme}, Live: true})
	}

	mint := func() []byte {
		jwt, err := s.tokens.app.JWT()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, s.emu.URL()+"/app/installations/77/access_tokens", nil)
		req.Header.Set("Authorization", "Bearer "+jwt)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	genuine := mint()
	add := func(name string, b []byte) {
		tokens = append(tokens, fuzzseed.Seed{Name: name, Values: []any{b}, Live: true})
	}
	add("emu-token", genuine)
	s.emu.SetFault(githubemu.RouteToken, githubemu.Fault{Kind: githubemu.FaultMalformedJSON})
	add("emu-fault-malformed", mint())
	s.emu.SetFault(githubemu.RouteToken, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 401})
	add("emu-fault-status-401", mint())
	s.emu.ClearFaults()
	g := string(genuine)
	add("hostile-token-crlf", []byte(strings.Replace(g, `"token":"`, `"token":"x\r\nX-Injected: 1\r\n`, 1)))
	add("hostile-token-expired", []byte(`{"token":"ghs_x","expires_at":"2001-01-01T00:00:00Z"}`))
	add("hostile-token-huge", []byte(`{"token":"`+strings.Repeat("A", 5000)+`","expires_at":"2099-01-01T00:00:00Z"}`))
	add("hostile-token-case-folded", []byte(strings.Replace(g, `"token":`, `"token":"first","TOKEN":`, 1)))
	return contents, tokens
}
