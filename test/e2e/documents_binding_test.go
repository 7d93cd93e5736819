package e2e

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to edit a PostgreSQL store under a live gateway
	_ "modernc.org/sqlite"             // the "sqlite" driver, to edit a SQLite store under a live gateway
)

// storeExec runs one statement on the gateway's store behind its back, as
// an operator's change (or another replica) would, and requires that it
// changed exactly one row. Values are the test's own: no placeholders, so
// one statement serves both backends.
func storeExec(t *testing.T, dbURL, stmt string) {
	t.Helper()
	var db *sql.DB
	var err error
	if path, ok := strings.CutPrefix(dbURL, "sqlite://"); ok {
		db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	} else {
		db, err = sql.Open("pgx", dbURL)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(stmt)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("%s: %d rows, %v", stmt, n, err)
	}
}

// TestDocumentsCursorBinding (docs/architecture.md#document-cursor): a
// document cursor is bound to the commit and path its source named when it
// was issued. Moving the source's pin, or its path, in the store under a live
// cursor makes the continuation cursor_stale before GitHub is asked; putting
// them back makes the same cursor good again.
func TestDocumentsCursorBinding(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{})
		d := s.docs
		src := s.sources[d.Runtime]
		alice := s.session(t, s.tokenA)
		out, isErr := callTool(t, alice, "git_document_get", map[string]any{"source_id": src, "max_bytes": 4096})
		if isErr {
			t.Fatal(out)
		}
		cursor, _ := out["next_cursor"].(string)
		if cursor == "" || out["commit_sha"] != d.Commit || out["path"] != d.Runtime {
			t.Fatalf("first fragment: %v", out)
		}
		next := map[string]any{"source_id": src, "cursor": cursor}
		moved := strings.Repeat("0123456789", 4)
		if moved == d.Commit {
			t.Fatal("the test's other commit is the pinned one")
		}
		cases := []struct {
			name, set, reset string
		}{
			{"pin moved", fmt.Sprintf("commit_sha = '%s'", moved), fmt.Sprintf("commit_sha = '%s'", d.Commit)},
			{"path changed", fmt.Sprintf("path = '%s'", d.Readme), fmt.Sprintf("path = '%s'", d.Runtime)},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				storeExec(t, s.dbURL, "UPDATE document_sources SET "+c.set+" WHERE id = '"+src+"'")
				before := s.emu.ContentsRequests()
				out, isErr := callTool(t, alice, "git_document_get", next)
				if !isErr || errorCode(t, out) != "cursor_stale" {
					t.Fatalf("continuation after the change: %v", out)
				}
				if s.emu.ContentsRequests() != before {
					t.Fatal("a stale cursor reached GitHub")
				}
				storeExec(t, s.dbURL, "UPDATE document_sources SET "+c.reset+" WHERE id = '"+src+"'")
				out, isErr = callTool(t, alice, "git_document_get", next)
				if isErr || out["start_byte"] != float64(4096) || out["commit_sha"] != d.Commit || out["path"] != d.Runtime {
					t.Fatalf("continuation after putting it back: %v", out)
				}
			})
		}
	})
}

// TestDocumentsInstructionSourcesUnreadable (docs/tools.md#git_document_get):
// an account instruction source (ins_…) is read only through catalog
// dispatch. git_document_get refuses its ID — pinned or
// tracking, existing or not, with or without a range — as invalid_arguments
// naming source_id (the published schema admits only src_… IDs), before the
// store or GitHub is asked.
func TestDocumentsInstructionSourcesUnreadable(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newCatalogStack(t, freshDB(t), true)
		alice := s.session(t, s.tokenA) // documents:read in project A, whose account owns the sources
		before := s.emu.ContentsRequests()
		for _, path := range []string{"docs/agents/core.md", "docs/agents/modes/worker.md", "docs/agents/roles/developer.md"} {
			id := s.ins[path]
			if !strings.HasPrefix(id, "ins_") {
				t.Fatalf("%s: instruction source ID %q", path, id)
			}
			for _, args := range []map[string]any{{"source_id": id}, {"source_id": id, "start_byte": 0, "max_bytes": 1}} {
				out, isErr := callTool(t, alice, "git_document_get", args)
				if !isErr || errorCode(t, out) != "invalid_arguments" || errorObj(t, out)["argument"] != "source_id" {
					t.Fatalf("git_document_get %s (%s): %v", id, path, out)
				}
			}
		}
		absent, _ := callTool(t, alice, "git_document_get", map[string]any{"source_id": "ins_" + strings.Repeat("a", 26)})
		if errorCode(t, absent) != "invalid_arguments" {
			t.Fatalf("an absent ins_ ID: %v", absent)
		}
		// The same store row under a document-source ID is no source of the
		// project either: the lookup is confined to document sources.
		disguised, _ := callTool(t, alice, "git_document_get", map[string]any{"source_id": "src_" + strings.TrimPrefix(s.ins["docs/agents/core.md"], "ins_")})
		if errorCode(t, disguised) != "not_found" {
			t.Fatalf("an instruction source's ID as src_: %v", disguised)
		}
		if s.emu.ContentsRequests() != before {
			t.Fatal("an instruction source was read from GitHub through git_document_get")
		}
		// The project's own sources still read.
		if out, isErr := callTool(t, alice, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); isErr {
			t.Fatalf("the project's own source: %v", out)
		}
	})
}
