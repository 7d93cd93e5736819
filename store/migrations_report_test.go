package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestMigrationReport: an open of an empty database reports every
// embedded migration applied, in order; the next open of the same database
// reports none; a Store that is not Open's has no report.
func TestMigrationReport(t *testing.T) {
	ctx := context.Background()
	for _, b := range []struct {
		name string
		url  func(t testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "gw.db") }},
		{"postgres", storetest.PostgresURL},
	} {
		t.Run(b.name, func(t *testing.T) {
			url := b.url(t)
			open := func() store.MigrationReport {
				t.Helper()
				st, err := store.Open(ctx, url, "")
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				r, ok := store.Migrations(st)
				if !ok {
					t.Fatal("no report for a store Open returned")
				}
				return r
			}
			first := open()
			if first.Backend != b.name || first.Known == 0 || len(first.Applied) != first.Known {
				t.Fatalf("first open: %+v", first)
			}
			for i, name := range first.Applied {
				if i > 0 && name <= first.Applied[i-1] || !strings.HasSuffix(name, ".sql") {
					t.Fatalf("applied out of order or misnamed: %v", first.Applied)
				}
			}
			if again := open(); again.Backend != b.name || again.Known != first.Known || len(again.Applied) != 0 {
				t.Fatalf("second open: %+v", again)
			}
		})
	}
	if _, ok := store.Migrations(nil); ok {
		t.Fatal("a report for a nil store")
	}
}
