package forgejo

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz targets of the Forgejo client's parsers of untrusted input:
// FuzzLinkHeader (the continuation of every native list: Link and
// X-Total-Count) and FuzzGrantJSON (every native grant answer). Their
// committed corpora (testdata/fuzz/…) are captured from the Core
// emulator's routes and fault switches by TestFuzzSeedsFromEmulator
// (fuzzseeds_test.go), plus the hostile shapes of the hostile-upstream
// tests.

// FuzzLinkHeader: newListing never panics, and its continuation is sound
// whatever Core (or a proxy) puts in Link and X-Total-Count: has_more
// exactly when next_page is set, next_page is page+1 and never wraps
// around, a total is never negative, and a Link value splits losslessly.
func FuzzLinkHeader(f *testing.F) {
	f.Add(`<https://forge.example/api/v1/repos/search?page=2>; rel="next"`, "31", int64(1), uint8(30))
	f.Add(`<https://forge.example/x?page=2>; rel="next"`, "", int64(math.MaxInt64), uint8(30))
	f.Add(``, "99999999999999999999", int64(math.MaxInt64-1), uint8(1))
	f.Fuzz(func(t *testing.T, link, total string, page int64, items uint8) {
		if page < 1 {
			page = 1 // the tools refuse other pages before any request
		}
		h := http.Header{}
		for _, v := range strings.Split(link, "\n") {
			h.Add("Link", v)
		}
		h.Set("X-Total-Count", total)
		p := newListing(make([]int, items), page, h)
		switch {
		case p.HasMore != (p.NextPage != nil):
			t.Fatalf("has_more %v with next_page %v", p.HasMore, p.NextPage)
		case p.NextPage != nil && (*p.NextPage != page+1 || *p.NextPage <= page):
			t.Fatalf("page %d has next_page %d", page, *p.NextPage)
		case p.Total != nil && *p.Total < 0:
			t.Fatalf("total %d", *p.Total)
		case p.Page != page || len(p.Items) != int(items):
			t.Fatalf("page %d items %d changed", p.Page, len(p.Items))
		}
		for _, sep := range []byte{',', ';'} {
			if got := strings.Join(splitOutside(link, sep), string(sep)); got != link {
				t.Fatalf("splitting on %q lost text: %q → %q", sep, link, got)
			}
		}
	})
}

// FuzzGrantJSON: the checks every native grant answer passes before it is
// handed to an agent as it came (checkNativeJSON, checkGrant,
// splitGrantSubmission, the list's per-item checks) never panic, and what
// they accept is what an independent reading with encoding/json accepts:
// valid UTF-8 JSON of bounded depth with no member repeated in any
// object, no lone surrogate escape, and the IDs, states and proposal
// triple the seed requires.
func FuzzGrantJSON(f *testing.F) {
	f.Add([]byte(testGrant("active")))
	f.Add([]byte(`{"grant":` + testGrant("active") + `,"submission":` + testReceipt("submitted") + `}`))
	f.Add([]byte(`[` + testGrant("awaiting_agent") + `,` + testGrant("revoked") + `]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		nativeErr := checkNativeJSON(body)
		reason := referenceNativeJSON(body)
		if nativeErr == nil && reason != "" {
			t.Fatalf("checkNativeJSON accepted what %s: %q", reason, body)
		}
		if nativeErr != nil && reason == "" && !holdsReplacementChar(body) {
			t.Fatalf("checkNativeJSON refused what the reference accepts (%v): %q", nativeErr, body)
		}
		agreeDecodeNative(t, body, nativeErr)
		trimmed := bytes.TrimSpace(body)
		if f, reason := checkGrant(trimmed, grantWant{}); reason == "" {
			ref := referenceGrant(t, trimmed)
			if f.id != ref.id || f.repositoryID != ref.repositoryID || f.agentID != ref.agentID || f.state != ref.state || f.digest != ref.digest {
				t.Fatalf("checkGrant read %+v, encoding/json reads %+v", f, ref)
			}
			// Owner and repository are matched without regard to case,
			// as Forgejo resolves them.
			want := grantWant{id: ref.id, owner: strings.ToUpper(ref.owner), repo: strings.ToLower(ref.repo), states: []string{ref.state}}
			if _, reason := checkGrant(trimmed, want); reason != "" {
				t.Fatalf("a grant checked without expectations fails its own: %s", reason)
			}
			if _, reason := checkGrant(trimmed, grantWant{id: ref.id + 1}); reason == "" && ref.id < math.MaxInt64 {
				t.Fatal("a grant with another ID passed")
			}
		}
		if g, s, reason := splitGrantSubmission(trimmed, grantWant{}, submissionWant{requestKey: referenceKey(trimmed)}); reason == "" {
			if !json.Valid(g) || !json.Valid(s) {
				t.Fatal("an accepted envelope holds invalid JSON")
			}
			referenceGrant(t, g)
		}
		if len(trimmed) > 0 && trimmed[0] == '[' {
			var items []json.RawMessage
			if json.Unmarshal(trimmed, &items) == nil {
				for _, it := range items {
					if _, reason := checkGrant(it, grantWant{}); reason == "" {
						referenceGrant(t, it)
					}
				}
			}
		}
	})
}

// referenceNativeJSON re-checks what checkNativeJSON promises with a
// different method (a recursive walk over encoding/json tokens, which
// also refuses numbers beyond float64; member names folded by
// strings.ToLower) and returns what is wrong, or "". Its test for lone
// surrogates cannot see one in a text that also holds U+FFFD, so a
// refusal it does not share counts only where holdsReplacementChar is
// false.
func referenceNativeJSON(body []byte) string {
	if !utf8.Valid(body) || !json.Valid(body) {
		return "is not valid UTF-8 JSON"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var walk func(depth int) string
	walk = func(depth int) string {
		tok, err := dec.Token()
		if err != nil {
			return "cannot be read"
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return ""
		}
		if depth+1 > maxNativeDepth {
			return "nests deeper than maxNativeDepth"
		}
		names := map[string]bool{}
		for dec.More() {
			if d == '{' {
				k, _ := dec.Token()
				name := strings.ToLower(k.(string))
				if names[name] {
					return "repeats a member"
				}
				names[name] = true
			}
			if r := walk(depth + 1); r != "" {
				return r
			}
		}
		_, _ = dec.Token()
		return ""
	}
	if r := walk(0); r != "" {
		return r
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "has trailing data"
	}
	// A lone surrogate escape decodes to U+FFFD; so does an escaped or
	// literal U+FFFD, which is allowed.
	var v any
	_ = json.Unmarshal(body, &v)
	again, _ := json.Marshal(v)
	if bytes.Contains(again, []byte("\ufffd")) && !holdsReplacementChar(body) {
		return "holds a lone surrogate escape"
	}
	return ""
}

// holdsReplacementChar reports whether JSON text holds U+FFFD, literally
// or as an escape.
func holdsReplacementChar(body []byte) bool {
	return bytes.Contains(body, []byte("\ufffd")) || bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`))
}

type refGrant struct {
	id, repositoryID, agentID int64
	owner, repo, state        string
	digest                    string
}

var refDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// referenceGrant reads an accepted grant with encoding/json and fails the
// test if it lacks what checkGrant promised.
func referenceGrant(t *testing.T, raw []byte) refGrant {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var g map[string]any
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("an accepted grant does not decode: %v", err)
	}
	id := func(m map[string]any, name string) int64 {
		n, ok := m[name].(json.Number)
		if !ok {
			t.Fatalf("accepted %s = %v, not a number", name, m[name])
		}
		v, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || v <= 0 || n.String() != strconv.FormatInt(v, 10) {
			t.Fatalf("accepted %s = %s, not a positive int64 literal", name, n)
		}
		return v
	}
	obj := func(m map[string]any, name string) map[string]any {
		o, ok := m[name].(map[string]any)
		if !ok {
			t.Fatalf("accepted %s = %v, not an object", name, m[name])
		}
		return o
	}
	str := func(m map[string]any, name string) string {
		s, ok := m[name].(string)
		if !ok {
			t.Fatalf("accepted %s = %v, not a string", name, m[name])
		}
		return s
	}
	var r refGrant
	r.id = id(g, "id")
	repo := obj(g, "repository")
	r.repositoryID, r.owner, r.repo = id(repo, "id"), str(repo, "owner"), str(repo, "name")
	r.agentID = id(obj(g, "agent"), "id")
	r.state = str(g, "state")
	id(g, "state_revision")
	p := obj(g, "proposal")
	r.digest = str(p, "digest")
	switch {
	case r.owner == "" || r.repo == "":
		t.Fatal("accepted an empty owner or name")
	case !slices.Contains(GrantStates, r.state):
		t.Fatalf("accepted state %q", r.state)
	case str(p, "schema") != ProposalSchema || p["version"] != json.Number("1") || !refDigest.MatchString(r.digest):
		t.Fatalf("accepted proposal %v", p)
	}
	str(p, "task")
	str(p, "summary")
	return r
}

// referenceKey is the request_key an envelope's receipt names, if any, so
// that the fuzzer reaches the receipt checks.
func referenceKey(raw []byte) string {
	var env struct {
		Submission struct {
			RequestKey string `json:"request_key"`
		} `json:"submission"`
	}
	_ = json.Unmarshal(raw, &env)
	return env.Submission.RequestKey
}
