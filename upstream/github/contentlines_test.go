package github

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// contentsAnswer renders a Contents answer for content as GitHub (and the
// emulator) does: base64 in 60-character lines inside the object.
func contentsAnswer(tb testing.TB, path string, content []byte) []byte {
	tb.Helper()
	sha := BlobSHA(content)
	body, err := json.Marshal(map[string]any{
		"type": "file", "encoding": "base64", "size": len(content), "name": "doc.md", "path": path,
		"content": githubemu.Base64Lines(content), "sha": sha,
		"url":      "https://api.github.com/repos/o/r/contents/" + path + "?ref=main",
		"git_url":  "https://api.github.com/repos/o/r/git/blobs/" + sha,
		"html_url": "https://github.com/o/r/blob/main/" + path, "download_url": "https://raw.githubusercontent.com/o/r/main/" + path,
		"_links": map[string]any{"self": "https://api.github.com/repos/o/r/contents/" + path, "git": "https://api.github.com/repos/o/r/git/blobs/" + sha,
			"html": "https://github.com/o/r/blob/main/" + path},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkParseFile is the gateway's work on a Contents answer for every
// document fragment (every fragment re-reads the whole file): the checks,
// the decoding, the base64 and the blob hash, for the demo's 204,800-byte
// document and the sizes of docs/performance.md.
//
//	go test ./upstream/github/ -run '^$' -bench BenchmarkParseFile -benchmem
func BenchmarkParseFile(b *testing.B) {
	for _, size := range []int{64 << 10, 200 << 10, 256 << 10, 1 << 20} {
		content := githubemu.MultiByteDocument(size)
		body := contentsAnswer(b, "docs/doc.md", content)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := parseFile(body, "docs/doc.md")
				if err != nil || len(f.Content) != len(content) {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSplitContent pins the split reading of the file's base64 against
// reading the whole answer: the same file or the same refusal, and the
// fallback where the string holds anything but base64 lines.
func TestSplitContent(t *testing.T) {
	hi := BlobSHA([]byte("hi"))
	head := `{"type":"file","encoding":"base64","size":2,"path":"a.md","sha":"` + hi + `",`
	for _, tc := range []struct {
		name  string
		body  string
		split bool
		code  toolerr.Code // "" for accepted
	}{
		{"lines", head + `"content":"aGk=\n"}`, true, ""},
		{"broken line", head + `"content":"aG\nk=\n"}`, true, ""},
		{"a group over three lines", head + `"content":"a\nG\nk=\n"}`, true, ""},
		{"padding over two lines", head + `"content":"aGk\n=\n\n"}`, true, ""},
		{"empty lines", head + `"content":"\n\naGk=\n\n"}`, true, ""},
		{"data after the padding", head + `"content":"aA==\naQ==\n"}`, true, toolerr.ProviderMalformed}, // "h" then "i"
		{"data after the padding in a line", head + `"content":"aGk=aGk=\n"}`, true, toolerr.ProviderMalformed},
		{"unfinished group at the end", head + `"content":"aGk=\naG"}`, true, toolerr.ProviderMalformed},
		{"unpadded", head + `"content":"aG\nk"}`, true, toolerr.ProviderMalformed},
		{"non-zero pad bits", head + `"content":"aGl=\n"}`, true, toolerr.ProviderMalformed},
		{"space around the colon", head + `"content" :  "aGk="}`, true, ""},
		{"nested content member first", `{"_links":{"content":"x"},` + head[1:] + `"content":"aGk="}`, true, ""},
		{"content inside a string", `{"note":"\",\"content\":\"QUJD\"",` + head[1:] + `"content":"aGk="}`, true, ""},
		{"other escape", head + `"content":"aGk\u003d"}`, false, ""},
		{"slash escape", head + `"content":"a\/k="}`, false, toolerr.ProviderMalformed},
		{"repeated", head + `"content":"aGk=","content":"aGk="}`, true, toolerr.ProviderMalformed},
		{"repeated in another case", head + `"content":"aGk=","Content":"aGk="}`, true, toolerr.ProviderMalformed},
		{"repeated escaped name", head + `"content":"aGk=","\u0063ontent":"aGk="}`, true, toolerr.ProviderMalformed},
		{"invalid after", head + `"content":"aGk=",}`, true, toolerr.ProviderMalformed},
		{"invalid before", `{"type":"file",,"content":"aGk="}`, true, toolerr.ProviderMalformed},
		{"unterminated", head + `"content":"aGk=`, false, toolerr.ProviderMalformed},
		{"bad base64", head + `"content":"aGk"}`, true, toolerr.ProviderMalformed},
		{"content not a string", head + `"content":null}`, false, toolerr.ProviderMalformed},
		{"array", `[` + head + `"content":"aGk="}]`, false, toolerr.NotRegularFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, split := splitContent([]byte(tc.body))
			if split != tc.split {
				t.Errorf("split %v, want %v", split, tc.split)
			}
			for _, whole := range []bool{true, false} {
				f, err := parseAnswer([]byte(tc.body), "a.md", !whole)
				switch {
				case tc.code == "" && (err != nil || string(f.Content) != "hi"):
					t.Errorf("whole=%v: %v, %v; want hi", whole, f, err)
				case tc.code != "" && (err == nil || toolerr.As(err).Code != tc.code):
					t.Errorf("whole=%v: %v; want %s", whole, err, tc.code)
				}
			}
		})
	}
}
