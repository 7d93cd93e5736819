package documents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream/github"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

var commit = strings.Repeat("c0", 20)

// fakeSources is an in-memory allowlist keyed by project and source ID.
type fakeSources struct {
	sources map[string]store.DocumentSource
	calls   int
}

func (f *fakeSources) GetDocumentSource(_ context.Context, projectID, sourceID string) (store.DocumentSource, error) {
	f.calls++
	s, ok := f.sources[sourceID]
	if !ok || s.ProjectID != projectID {
		return store.DocumentSource{}, fmt.Errorf("%w: document source", store.ErrNotFound)
	}
	return s, nil
}

func (f *fakeSources) ListDocumentSources(_ context.Context, projectID string, _ bool) ([]store.DocumentSource, error) {
	f.calls++
	var out []store.DocumentSource
	for _, s := range f.sources {
		if s.ProjectID == projectID && s.Active() {
			out = append(out, s)
		}
	}
	return out, nil
}

// fakeFiles serves files by path.
type fakeFiles struct {
	files map[string][]byte
	calls int
	// handed, when not nil, gets each File served, its content a copy of
	// its own.
	handed *[]*github.File
	served [][]byte // the content of each File handed
}

func (f *fakeFiles) GetFile(_ context.Context, r github.FileRequest) (*github.File, error) {
	f.calls++
	c, ok := f.files[r.Path]
	if !ok || r.Commit != commit {
		return nil, toolerr.New(toolerr.ProviderNotFound, "no such file")
	}
	if f.handed != nil {
		file := &github.File{Path: r.Path, Content: bytes.Clone(c)}
		*f.handed = append(*f.handed, file)
		f.served = append(f.served, file.Content)
		return file, nil
	}
	return &github.File{Path: r.Path, Content: c}, nil
}

type fixture struct {
	sources *fakeSources
	files   *fakeFiles
	tools   map[string]toolset.Tool
	doc     []byte
}

func source(id, project, role, path string, pinned bool, limit int) store.DocumentSource {
	s := store.DocumentSource{
		ID: id, ProjectID: project, Role: role, Path: path, FragmentLimit: limit,
		Repository: store.Repository{ID: "rep_1", ProjectID: project, Owner: "octo", Name: "docs", InstallationID: 77},
	}
	if pinned {
		s.CommitSHA = commit
	} else {
		s.TrackingRef = "main"
	}
	return s
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	doc := githubemu.MultiByteDocument(150 << 10)
	revoked := source("src_revoked", "prj_a", "runtime", "docs/doc.md", true, 65536)
	now := time.Now()
	revoked.RevokedAt = &now
	f := &fixture{
		doc: doc,
		sources: &fakeSources{sources: map[string]store.DocumentSource{
			"src_doc":     source("src_doc", "prj_a", "runtime", "docs/doc.md", true, 65536),
			"src_small":   source("src_small", "prj_a", "runtime", "docs/doc.md", true, 1000),
			"src_track":   source("src_track", "prj_a", "instruction", "docs/doc.md", false, 65536),
			"src_latin":   source("src_latin", "prj_a", "runtime", "docs/latin1.txt", true, 65536),
			"src_empty":   source("src_empty", "prj_a", "runtime", "docs/empty.md", true, 65536),
			"src_revoked": revoked,
			"src_b":       source("src_b", "prj_b", "runtime", "docs/doc.md", true, 65536),
		}},
		files: &fakeFiles{files: map[string][]byte{
			"docs/doc.md": doc, "docs/latin1.txt": []byte("caf\xe9\n"), "docs/empty.md": {},
		}},
		tools: map[string]toolset.Tool{},
	}
	for _, tool := range Tools(Options{Sources: f.sources, Files: f.files, Cursors: testCursors(t, time.Minute)}) {
		f.tools[tool.Name] = tool
	}
	return f
}

func consentCtx(project, consent string) context.Context {
	return middleware.WithPrincipal(context.Background(), &middleware.Principal{
		Kind: middleware.OAuthConsent, Key: "grant:" + consent, ConsentID: consent, ProjectID: project,
		Scopes: []string{ReadScope.Name}, ScopesKnown: true,
	})
}

func (f *fixture) call(ctx context.Context, tool string, args map[string]any) (map[string]any, *toolerr.Error) {
	raw, _ := json.Marshal(args)
	out, err := f.tools[tool].Handle(ctx, raw)
	if err != nil {
		return nil, toolerr.As(err)
	}
	b, _ := json.Marshal(out)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m, nil
}

func TestReadWholeDocumentByCursor(t *testing.T) {
	for _, maxBytes := range []int64{0, 1000, 4096, 4} {
		t.Run(fmt.Sprint("max_bytes=", maxBytes), func(t *testing.T) {
			f := newFixture(t)
			if maxBytes < 100 {
				// Tiny fragments of a small document: every character edge.
				f.doc = githubemu.MultiByteDocument(4 << 10)
				f.files.files["docs/doc.md"] = f.doc
			}
			ctx := consentCtx("prj_a", "grt_1")
			args := map[string]any{"source_id": "src_doc"}
			if maxBytes > 0 {
				args["max_bytes"] = maxBytes
			}
			var got bytes.Buffer
			for i := 0; ; i++ {
				out, err := f.call(ctx, "git_document_get", args)
				if err != nil {
					t.Fatalf("fragment %d: %v", i, err)
				}
				content := out["content"].(string)
				limit := int64(MaxFragmentBytes)
				if maxBytes > 0 {
					limit = maxBytes
				}
				if int64(len(content)) > limit || !utf8.ValidString(content) || out["fragment_sha256"] != sha256Hex([]byte(content)) ||
					int64(out["start_byte"].(float64)) != int64(got.Len()) || int64(out["end_byte"].(float64)) != int64(got.Len()+len(content)) {
					t.Fatalf("fragment %d: %d bytes, start %v end %v", i, len(content), out["start_byte"], out["end_byte"])
				}
				got.WriteString(content)
				if out["file_sha256"] != sha256Hex(f.doc) || int(out["file_bytes"].(float64)) != len(f.doc) {
					t.Fatal("file_sha256 or file_bytes is wrong")
				}
				next, ok := out["next_cursor"].(string)
				if !ok {
					break
				}
				args = map[string]any{"source_id": "src_doc", "cursor": next}
				if maxBytes > 0 {
					args["max_bytes"] = maxBytes
				}
			}
			if !bytes.Equal(got.Bytes(), f.doc) {
				t.Fatal("reassembled document differs")
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	a := consentCtx("prj_a", "grt_1")
	first, _ := f.call(a, "git_document_get", map[string]any{"source_id": "src_doc"})
	cursor := first["next_cursor"].(string)
	// The first multi-byte character's second byte.
	inside := int64(bytes.IndexRune(f.doc, 'ä') + 1)
	cases := []struct {
		name string
		ctx  context.Context
		args map[string]any
		code toolerr.Code
	}{
		{"another project's source", a, map[string]any{"source_id": "src_b"}, toolerr.NotFound},
		{"absent source", a, map[string]any{"source_id": "src_nope"}, toolerr.NotFound},
		{"revoked", a, map[string]any{"source_id": "src_revoked"}, toolerr.SourceRevoked},
		{"tracking", a, map[string]any{"source_id": "src_track"}, toolerr.SourceRequiresDispatch},
		{"not UTF-8", a, map[string]any{"source_id": "src_latin"}, toolerr.NotUTF8},
		{"start inside a character", a, map[string]any{"source_id": "src_doc", "start_byte": inside}, toolerr.RangeNotUTF8Boundary},
		{"max_bytes below the character", a, map[string]any{"source_id": "src_doc", "start_byte": inside - 1, "max_bytes": 1}, toolerr.RangeNotUTF8Boundary},
		{"start past the end", a, map[string]any{"source_id": "src_doc", "start_byte": len(f.doc) + 1}, toolerr.InvalidArguments},
		{"start and cursor", a, map[string]any{"source_id": "src_doc", "start_byte": 0, "cursor": cursor}, toolerr.InvalidArguments},
		{"max_bytes 0", a, map[string]any{"source_id": "src_doc", "max_bytes": 0}, toolerr.InvalidArguments},
		{"max_bytes over 64 KiB", a, map[string]any{"source_id": "src_doc", "max_bytes": 65537}, toolerr.InvalidArguments},
		{"source_id with a path", a, map[string]any{"source_id": "../src_doc"}, toolerr.InvalidArguments},
		{"cursor of another consent", consentCtx("prj_a", "grt_2"), map[string]any{"source_id": "src_doc", "cursor": cursor}, toolerr.CursorInvalid},
		{"cursor of another project", consentCtx("prj_b", "grt_1"), map[string]any{"source_id": "src_doc", "cursor": cursor}, toolerr.CursorInvalid},
		{"cursor for another source", a, map[string]any{"source_id": "src_small", "cursor": cursor}, toolerr.CursorInvalid},
		{"no principal", context.Background(), map[string]any{"source_id": "src_doc"}, toolerr.InsufficientScope},
		{"legacy principal", middleware.WithPrincipal(context.Background(), &middleware.Principal{Kind: middleware.LegacyProjectToken, ProjectID: "prj_a", ScopesKnown: true}), map[string]any{"source_id": "src_doc"}, toolerr.InsufficientScope},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.call(c.ctx, "git_document_get", c.args)
			if err == nil || err.Code != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
		})
	}
	// Absent and foreign sources are indistinguishable.
	_, e1 := f.call(a, "git_document_get", map[string]any{"source_id": "src_b"})
	_, e2 := f.call(a, "git_document_get", map[string]any{"source_id": "src_nope"})
	if e1.Error() != e2.Error() {
		t.Fatalf("foreign %q differs from absent %q", e1, e2)
	}
}

func TestRefusedBeforeAnyRead(t *testing.T) {
	f := newFixture(t)
	for _, ctx := range []context.Context{context.Background(), consentCtx("prj_a", "grt_1")} {
		f.call(ctx, "git_document_get", map[string]any{"source_id": "src_doc", "cursor": "forged"})
	}
	f.call(context.Background(), "runtime_bootstrap_get", nil)
	if f.sources.calls != 0 || f.files.calls != 0 {
		t.Fatalf("store calls %d, GitHub calls %d; want none", f.sources.calls, f.files.calls)
	}
}

func TestSourceLimitAndEmptyFile(t *testing.T) {
	f := newFixture(t)
	a := consentCtx("prj_a", "grt_1")
	out, err := f.call(a, "git_document_get", map[string]any{"source_id": "src_small"})
	if err != nil || len(out["content"].(string)) > 1000 || out["next_cursor"] == nil {
		t.Fatalf("fragment limit: %v %v", err, out)
	}
	out, err = f.call(a, "git_document_get", map[string]any{"source_id": "src_empty"})
	if err != nil || out["content"] != "" || out["end_byte"] != float64(0) || out["file_bytes"] != float64(0) {
		t.Fatalf("empty: %v %v", err, out)
	}
	if _, ok := out["next_cursor"]; ok {
		t.Fatal("an empty file has a next_cursor")
	}
	keys := []string{}
	for k := range out {
		keys = append(keys, k)
	}
	if len(keys) != 8 {
		t.Fatalf("result members %v, want the 8 of docs/tools.md (next_cursor absent)", keys)
	}
}

func TestBootstrap(t *testing.T) {
	f := newFixture(t)
	out, err := f.call(consentCtx("prj_a", "grt_1"), "runtime_bootstrap_get", nil)
	if err != nil {
		t.Fatal(err)
	}
	srcs := out["sources"].([]any)
	if len(srcs) != 5 {
		t.Fatalf("%d sources, want the 5 active ones of prj_a", len(srcs))
	}
	for _, s := range srcs {
		m := s.(map[string]any)
		if m["source_id"] == "src_track" {
			if m["commit_sha"] != nil || m["tracking_ref"] != "main" || m["requires_dispatch"] != true {
				t.Fatalf("tracking source %v", m)
			}
		} else if m["commit_sha"] != commit {
			t.Fatalf("pinned source %v", m)
		}
	}
	// A project without an active runtime source.
	f.sources.sources = map[string]store.DocumentSource{"src_track": source("src_track", "prj_a", "instruction", "docs/doc.md", false, 65536)}
	if _, err := f.call(consentCtx("prj_a", "grt_1"), "runtime_bootstrap_get", nil); err == nil || err.Code != toolerr.RuntimeUnconfigured {
		t.Fatalf("err = %v, want runtime_unconfigured", err)
	}
	if _, err := f.call(consentCtx("prj_c", "grt_1"), "runtime_bootstrap_get", nil); err == nil || err.Code != toolerr.RuntimeUnconfigured {
		t.Fatalf("err = %v, want runtime_unconfigured", err)
	}
}

func TestFragmentEnd(t *testing.T) {
	doc := []byte("aé€😀b") // 1 + 2 + 3 + 4 + 1 bytes
	cases := []struct {
		start int64
		limit int
		end   int64
		err   bool
	}{
		{0, 1, 1, false}, {0, 2, 1, false}, {0, 3, 3, false}, {1, 4, 3, false}, {3, 3, 6, false},
		{6, 3, 0, true}, {6, 4, 10, false}, {2, 10, 0, true}, {10, 5, 11, false}, {11, 5, 11, false},
	}
	for _, c := range cases {
		end, err := fragmentEnd(doc, c.start, c.limit)
		if (err != nil) != c.err || (!c.err && end != c.end) {
			t.Errorf("fragmentEnd(%d, %d) = %d, %v; want %d, err %v", c.start, c.limit, end, err, c.end, c.err)
		}
	}
}

// TestFragmentKeepsNoContent: a fragment's answer holds copies only, so
// the file's buffer can go back for reuse when the call returns
// (github.File.Release, which get calls): overwriting every byte the
// reader was handed, as a later read reusing the buffer would, changes
// nothing of the answer.
func TestFragmentKeepsNoContent(t *testing.T) {
	f := newFixture(t)
	var handed []*github.File
	f.files.handed = &handed
	for _, start := range []int64{0, 1000} {
		raw, _ := json.Marshal(map[string]any{"source_id": "src_doc", "start_byte": start})
		out, err := f.tools["git_document_get"].Handle(consentCtx("prj_a", "grt_1"), raw)
		if err != nil {
			t.Fatal(err)
		}
		file := handed[len(handed)-1]
		if file.Content != nil {
			t.Fatal("the file was not released when the call returned")
		}
		before, _ := json.Marshal(out)
		buf := f.files.served[len(f.files.served)-1]
		for i := range buf {
			buf[i] = 'X'
		}
		after, _ := json.Marshal(out)
		if !bytes.Equal(before, after) {
			t.Fatal("the answer changed with the file's buffer")
		}
		var m map[string]any
		_ = json.Unmarshal(after, &m)
		if m["content"] != string(f.doc[start:int64(m["end_byte"].(float64))]) {
			t.Fatal("the answer is not the file's bytes")
		}
	}
}
