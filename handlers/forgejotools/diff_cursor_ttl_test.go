package forgejotools

import (
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
)

// TestDiffCursorHasNoTTL: a diff cursor has no expiry
// (docs/architecture.md#diff-cursor). A cursor issued, then decoded a century
// later on the bubble's fake clock, is the same cursor and still continues
// the same diff; so a clock read anywhere in issuing or checking a cursor,
// against a time the cursor carries or one the process keeps, fails this
// test. The cursor also carries nothing a TTL could be measured from: no
// field of a time type or with a time's name, at any level.
func TestDiffCursorHasNoTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sampleCursor()
		s := c.Encode()
		time.Sleep(100 * 365 * 24 * time.Hour)
		got, err := DecodeDiffCursor(s)
		if err != nil || got != c {
			t.Fatalf("a century later: %+v, %v", got, err)
		}
		id := evidence.Identity{
			RepositoryID: c.RepositoryID, PullRequestID: c.PullRequestID, Index: c.Index, Owner: c.Owner, Name: c.Repo,
			ObjectFormat: c.ObjectFormat, BaseRepositoryID: c.Base.RepositoryID, BaseOID: c.Base.OID, BaseSource: c.Base.Source,
			HeadRepositoryID: c.Head.RepositoryID, HeadOID: c.Head.OID, HeadRef: c.Head.Ref,
			Profile: c.Profile, ByteCount: c.ByteCount, SHA256: c.SHA256,
		}
		if !got.matches(c.Owner, c.Repo, c.Index) || !got.sameDiff(id) {
			t.Fatal("a century later the cursor no longer continues its diff")
		}
		if again := newDiffCursor(c.Owner, c.Repo, id, c.Offset).Encode(); again != s {
			t.Fatalf("the same continuation issued a century later differs:\n%s\n%s", s, again)
		}
	})
	timeLike := []string{"time", "exp", "iat", "nbf", "ttl", "issued", "valid", "deadline", "_at", "age", "clock"}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := strings.ToLower(f.Name + " " + f.Tag.Get("json"))
			switch {
			case f.Type.PkgPath() == "time":
				t.Errorf("%s.%s is a %s", path, f.Name, f.Type)
			case f.Type.Kind() == reflect.Struct:
				walk(path+"."+f.Name, f.Type)
			}
			for _, w := range timeLike {
				if strings.Contains(name, w) {
					t.Errorf("%s.%s (%s) looks like a time", path, f.Name, name)
				}
			}
		}
	}
	walk("DiffCursor", reflect.TypeFor[DiffCursor]())
}
