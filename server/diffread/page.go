package diffread

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/diffpage"
)

// ToolName is the MCP tool this package reads.
const ToolName = "get_pull_request_diff"

// Requested is the pull request a page says it was asked for.
type Requested = diffpage.Requested

// Page is one result of get_pull_request_diff (docs/tools.md), as sent:
// nothing in it is trusted until a Verifier has checked it.
type Page = diffpage.Page

// DecodePage parses a page's JSON text as strictly as the gateway writes
// it, so that no other JSON reader of the same text can read another
// value than the reader checks: valid UTF-8 and JSON without lone
// surrogate escapes, no member repeated in one object (exactly or in
// another letter case), exactly the documented members of the page, of
// requested and of the manifest, at every level, each of its type (text
// and next_cursor may be null, nothing else), and every number a plain
// integer from 0 to 2^53-1.
func DecodePage(text []byte) (*Page, error) {
	if err := checkText(text); err != nil {
		return nil, fmt.Errorf("the page: %w", err)
	}
	if err := checkClosed(text, pageShape, ""); err != nil {
		return nil, err
	}
	var p Page
	if err := json.Unmarshal(text, &p); err != nil { // exact names only, as checked
		return nil, fmt.Errorf("the page's members have the wrong types: %w", err)
	}
	return &p, nil
}

// Manifest is the verified manifest of a diff: every member of Forgejo's
// evidence entity but the data (docs/architecture.md#evidence-entity). Raw
// keeps it exactly as the gateway sent it and the reader checked it: exactly
// these members, none repeated, so any JSON reader of Raw reads the values
// Manifest holds.
type Manifest struct {
	Schema     string `json:"schema"`
	Repository struct {
		ID    int64  `json:"id"`
		Owner string `json:"owner"`
		Name  string `json:"name"`
	} `json:"repository"`
	PullRequest struct {
		ID    int64 `json:"id"`
		Index int64 `json:"index"`
	} `json:"pull_request"`
	ObjectFormat string `json:"object_format"`
	Generation   struct {
		Profile string `json:"profile"`
		Base    struct {
			RepositoryID int64  `json:"repository_id"`
			OID          string `json:"oid"`
			Source       string `json:"source"`
		} `json:"base"`
		Head struct {
			RepositoryID int64  `json:"repository_id"`
			OID          string `json:"oid"`
			Ref          string `json:"ref"`
		} `json:"head"`
		CapturedAt  string `json:"captured_at"`
		GeneratedAt string `json:"generated_at"`
	} `json:"generation"`
	Observations json.RawMessage `json:"observations"`
	Content      struct {
		MediaType string `json:"media_type"`
		Encoding  string `json:"encoding"`
		ByteCount int64  `json:"byte_count"`
		SHA256    string `json:"sha256"`
	} `json:"content"`

	Raw json.RawMessage `json:"-"`
}

// observedMembers are the manifest's observations: fresh on every page and
// free to change between pages (docs/architecture.md#evidence-entity,
// "What the manifest means").
// Everything else names the diff and must not change.
var observedMembers = map[string][]string{
	"":           {"observations"},
	"generation": {"captured_at", "generated_at"},
}

// checkManifest refuses a manifest that is not exactly the manifest's
// members, as DecodePage does; a Verifier checks it again because it may
// be fed pages some other code decoded.
func checkManifest(raw json.RawMessage) error {
	if err := checkText(raw); err != nil {
		return fmt.Errorf("the manifest: %w", err)
	}
	return checkClosed(raw, manifestShape, "manifest")
}

// parseManifest decodes a manifest checkManifest accepted and returns it
// with its identity: the manifest without its observations, as a tree of
// JSON values (numbers kept as written), and in one canonical form
// (members sorted), so two pages of one diff compare equal byte for byte.
func parseManifest(raw json.RawMessage) (*Manifest, map[string]any, string, error) {
	m := &Manifest{Raw: raw}
	if err := json.Unmarshal(raw, m); err != nil {
		return nil, nil, "", fmt.Errorf("the manifest is malformed: %w", err)
	}
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, nil, "", fmt.Errorf("the manifest is malformed: %w", err)
	}
	for parent, names := range observedMembers {
		obj := tree
		if parent != "" {
			obj, _ = tree[parent].(map[string]any)
		}
		for _, n := range names {
			delete(obj, n)
		}
	}
	id, err := json.Marshal(tree)
	if err != nil {
		return nil, nil, "", err
	}
	return m, tree, string(id), nil
}

// firstDifference returns the path of the first member (in sorted order)
// whose value differs between two identity trees, with both values as
// JSON ("absent" for a missing member).
func firstDifference(a, b map[string]any, path string) (string, string, string) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	render := func(v any, ok bool) string {
		if !ok {
			return "absent"
		}
		j, _ := json.Marshal(v)
		return string(j)
	}
	for _, k := range keys {
		va, oka := a[k]
		vb, okb := b[k]
		ma, isMapA := va.(map[string]any)
		mb, isMapB := vb.(map[string]any)
		if isMapA && isMapB {
			if p, x, y := firstDifference(ma, mb, path+"."+k); p != "" {
				return p, x, y
			}
			continue
		}
		if x, y := render(va, oka), render(vb, okb); x != y {
			return path + "." + k, x, y
		}
	}
	return "", "", ""
}
