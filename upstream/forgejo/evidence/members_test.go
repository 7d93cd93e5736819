package evidence_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// TestManifestMembers: ManifestMembers describes, member by member and in
// order, the manifest Verify writes, with each value of its type (null
// where it is nullable), so a page reader holding manifests to it accepts
// exactly the gateway's.
func TestManifestMembers(t *testing.T) {
	diff := []byte("+a\n")
	e := et.Sample().WithDiff(diff)
	e.TargetOID, e.ForkRepositoryID = "", 0 // the two nullable members, null
	v, err := evidence.Verify(bytes.NewReader(et.Bytes(e, diff)), evidence.Request{Index: e.Index, Window: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := describe(t, json.NewDecoder(bytes.NewReader(v.Manifest)))
	if want := evidence.ManifestMembers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the manifest is\n%+v\nManifestMembers says\n%+v", got, want)
	}
}

// describe reads one JSON object from dec as Members, in order; a null is
// taken for a nullable string or number, as the manifest's two are.
func describe(t *testing.T, dec *json.Decoder) []evidence.Member {
	t.Helper()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	var out []evidence.Member
	for dec.More() {
		name, _ := dec.Token()
		m := evidence.Member{Name: name.(string)}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		switch c := raw[0]; {
		case c == '{':
			m.Type, m.Members = "object", describe(t, json.NewDecoder(bytes.NewReader(raw)))
		case c == '"':
			m.Type = "string"
		case c == 't' || c == 'f':
			m.Type = "boolean"
		case c == 'n':
			m.Nullable = true
			m.Type = map[string]string{"oid": "string", "repository_id": "number"}[m.Name]
		default:
			m.Type = "number"
		}
		out = append(out, m)
	}
	return out
}
