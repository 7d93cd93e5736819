package github

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
				f.Release() // as the document reader does
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
		{"raw newline in the string", head + `"content":"aGk=` + "\n" + `"}`, false, toolerr.ProviderMalformed},
		{"raw newline inside a group", head + `"content":"aG` + "\n" + `k="}`, false, toolerr.ProviderMalformed},
		{"raw carriage return", head + `"content":"aGk=` + "\r" + `"}`, false, toolerr.ProviderMalformed},
		{"CRLF escapes", head + `"content":"aGk=\r\n"}`, false, ""}, // the base64 decoder skips CR and LF
		{"bad character after bad padding", head + `"content":"aGl=\n!"}`, false, toolerr.ProviderMalformed},
		{"non-ASCII", head + `"content":"aGk=é"}`, false, toolerr.ProviderMalformed},
		{"three pads", head + `"content":"aG==\n=\n"}`, true, toolerr.ProviderMalformed},
		{"pad alone", head + `"content":"=\n"}`, true, toolerr.ProviderMalformed},
		{"sha mismatch", strings.Replace(head, hi, BlobSHA([]byte("ho")), 1) + `"content":"aGk=\n"}`, true, toolerr.ProviderMalformed},
		{"more data than the size", head + `"content":"aGkh\n"}`, true, toolerr.ProviderMalformed},
		{"less data than the size", head + `"content":"aA==\n"}`, true, toolerr.ProviderMalformed},
		{"size after content", `{"type":"file","encoding":"base64","path":"a.md","sha":"` + hi + `","content":"aGk=\n","size":2}`, true, ""},
		{"size as a float", strings.Replace(head, `"size":2`, `"size":2.0`, 1) + `"content":"aGk=\n"}`, true, toolerr.ProviderMalformed},
		{"size with a leading zero", strings.Replace(head, `"size":2`, `"size":02`, 1) + `"content":"aGk=\n"}`, true, toolerr.ProviderMalformed},
		{"negative size", strings.Replace(head, `"size":2`, `"size":-2`, 1) + `"content":"aGk=\n"}`, true, toolerr.ProviderMalformed},
		{"size over the bound", strings.Replace(head, `"size":2`, `"size":1048577`, 1) + `"content":"aGk=\n"}`, true, toolerr.FileTooLarge},
		{"size repeated", strings.Replace(head, `"size":2`, `"size":3,"size":2`, 1) + `"content":"aGk=\n"}`, true, toolerr.ProviderMalformed},
		{"size in another case", strings.Replace(head, `"size":2`, `"Size":3,"size":2`, 1) + `"content":"aGk=\n"}`, true, toolerr.ProviderMalformed},
		{"nested size", `{"_links":{"size":3},` + head[1:] + `"content":"aGk=\n"}`, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, split := splitContent([]byte(tc.body))
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

// TestSplitContentHashes: a file as GitHub sends it (base64 in 60-character
// lines, the size before the content) is decoded and hashed in the one
// pass, across the hash's chunks, and the blob ID is the file's, with the
// size before the content or after it (contentsAnswer's map order); when
// the size is not a plain integer or the data is not the size it reports,
// no blob ID is made on the way and parseFile hashes what it decoded.
func TestSplitContentHashes(t *testing.T) {
	for _, size := range []int{0, 1, 2, 3, 45, 46, hashChunk - 1, hashChunk, hashChunk + 1, 3*hashChunk + 7, 200 << 10, MaxFileBytes} {
		content := githubemu.MultiByteDocument(size)
		body := contentsAnswer(t, "docs/doc.md", content)
		f, ok := splitContent(bytes.TrimSpace(body))
		if !ok || f.err != nil || !bytes.Equal(f.content, content) {
			t.Fatalf("%d bytes: split %v, err %v, %d bytes decoded", size, ok, f.err, len(f.content))
		}
		if f.blobSHA != BlobSHA(content) || f.size != int64(size) {
			t.Errorf("%d bytes: blob ID %q (size %d), want %q", size, f.blobSHA, f.size, BlobSHA(content))
		}
		if file, err := parseFile(body, "docs/doc.md"); err != nil || !bytes.Equal(file.Content, content) {
			t.Errorf("%d bytes: %v", size, err)
		}
	}
	content := []byte("hello")
	for name, body := range map[string]string{
		"size too small": `{"type":"file","size":4,"content":"` + base64Lines(content) + `"}`,
		"size too large": `{"type":"file","size":6,"content":"` + base64Lines(content) + `"}`,
		"size not plain": `{"type":"file","size":5e0,"content":"` + base64Lines(content) + `"}`,
	} {
		f, ok := splitContent([]byte(body))
		if !ok || f.err != nil || string(f.content) != "hello" || f.blobSHA != "" {
			t.Errorf("%s: split %v, err %v, %q, blob ID %q; want no blob ID", name, ok, f.err, f.content, f.blobSHA)
		}
	}
}

// base64Lines is content as GitHub puts it in a JSON string: base64 in
// 60-character lines, each ended by a "\n" escape.
func base64Lines(content []byte) string {
	return strings.ReplaceAll(githubemu.Base64Lines(content), "\n", `\n`)
}
