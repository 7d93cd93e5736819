package forgejoemu

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestLinkHeader(t *testing.T) {
	t.Parallel()
	const origin = "http://forge.test"
	u, _ := url.Parse("/api/v1/repos/search?q=r&limit=30")
	link := func(page int, rel string) string {
		return fmt.Sprintf("<%s/api/v1/repos/search?limit=30&page=%d&q=r>; rel=%q", origin, page, rel)
	}
	tests := []struct {
		name                 string
		total, size, rawPage int
		want                 string
	}{
		{"no page, more to come", 31, 30, 0, link(2, "next") + "," + link(2, "last")},
		{"first page", 31, 30, 1, link(2, "next") + "," + link(2, "last")},
		{"negative page is page 1", 31, 30, -4, link(2, "next") + "," + link(2, "last")},
		{"last page", 31, 30, 2, link(1, "first") + "," + link(1, "prev")},
		{"past the end clamps to the last page", 31, 30, 9, link(1, "first") + "," + link(1, "prev")},
		{"middle page", 61, 30, 2, link(3, "next") + "," + link(3, "last") + "," + link(1, "first") + "," + link(1, "prev")},
		{"everything fits", 31, 50, 1, ""},
		{"exactly one page", 30, 30, 1, ""},
		{"nothing", 0, 30, 1, ""},
		{"nothing, page 5", 0, 30, 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := linkHeader(origin, u, tt.total, tt.size, tt.rawPage); got != tt.want {
				t.Errorf("linkHeader(%d, %d, %d)\n got %s\nwant %s", tt.total, tt.size, tt.rawPage, got, tt.want)
			}
		})
	}
}

func TestListOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query           string
		size            int
		total           int
		start, end      int
		wantRawPage     int
		wantDescription string
	}{
		{"", 30, 31, 0, 30, 0, "defaults: limit 30, page 1"},
		{"limit=100", 50, 31, 0, 31, 0, "limit clamped at 50"},
		{"limit=50", 50, 31, 0, 31, 0, "limit at the maximum"},
		{"limit=0", 30, 31, 0, 30, 0, "limit 0 is the default"},
		{"limit=-3", 30, 31, 0, 30, 0, "negative limit is the default"},
		{"limit=abc", 30, 31, 0, 30, 0, "non-integer limit is the default"},
		{"page=2", 30, 31, 30, 31, 2, "second page"},
		{"page=0", 30, 31, 0, 30, 0, "page 0 is page 1"},
		{"page=-1", 30, 31, 0, 30, -1, "negative page is page 1"},
		{"page=x", 30, 31, 0, 30, 0, "non-integer page is page 1"},
		{"page=3", 30, 31, 31, 31, 3, "past the end is empty"},
		{"page=9223372036854775807", 30, 31, 31, 31, 9223372036854775807, "huge page is empty, not an overflow"},
		{"limit=10&page=2", 10, 31, 10, 20, 2, "small pages"},
	}
	for _, tt := range tests {
		t.Run(tt.wantDescription, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			o := listOptions{rawPage: formInt(q, "page"), pageSize: correctPageSize(formInt(q, "limit"))}
			if o.pageSize != tt.size || o.rawPage != tt.wantRawPage {
				t.Errorf("options = %+v, want size %d page %d", o, tt.size, tt.wantRawPage)
			}
			if s, e := o.bounds(tt.total); s != tt.start || e != tt.end {
				t.Errorf("bounds(%d) = [%d,%d), want [%d,%d)", tt.total, s, e, tt.start, tt.end)
			}
		})
	}
}

// TestSearchPagination pages through 31 public repositories as Forgejo would.
func TestSearchPagination(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	for i := range 31 {
		if _, err := e.CreateRepo("team", fmt.Sprintf("r%02d", i), RepoOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	link := func(rawQuery, rel string) string {
		return fmt.Sprintf("<%s/api/v1/repos/search?%s>; rel=%q", e.URL(), rawQuery, rel)
	}
	tests := []struct {
		query      string
		first      string // name of the first repository on the page
		n, total   int
		link       string
		exposeLink bool
	}{
		{"q=r", "r00", 30, 31, link("page=2&q=r", "next") + "," + link("page=2&q=r", "last"), true},
		{"q=r&page=1", "r00", 30, 31, link("page=2&q=r", "next") + "," + link("page=2&q=r", "last"), true},
		{"q=r&page=0", "r00", 30, 31, link("page=2&q=r", "next") + "," + link("page=2&q=r", "last"), true},
		{"q=r&page=2", "r30", 1, 31, link("page=1&q=r", "first") + "," + link("page=1&q=r", "prev"), true},
		{"q=r&page=3", "", 0, 31, link("page=1&q=r", "first") + "," + link("page=1&q=r", "prev"), true},
		{"q=r&limit=100", "r00", 31, 31, "", false},
		{"q=r&limit=50", "r00", 31, 31, "", false},
		{"q=r&limit=abc", "r00", 30, 31, link("limit=abc&page=2&q=r", "next") + "," + link("limit=abc&page=2&q=r", "last"), true},
		{"limit=10&page=2&q=r", "r10", 10, 31,
			link("limit=10&page=3&q=r", "next") + "," + link("limit=10&page=4&q=r", "last") + "," +
				link("limit=10&page=1&q=r", "first") + "," + link("limit=10&page=1&q=r", "prev"), true},
		{"q=r2", "r20", 10, 10, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			a := get(t, e, "/api/v1/repos/search?"+tt.query, "")
			if a.status != 200 {
				t.Fatalf("status %d: %s", a.status, a.body)
			}
			res := decode[struct {
				OK   bool `json:"ok"`
				Data []struct {
					Name string `json:"name"`
				} `json:"data"`
			}](t, a)
			if !res.OK || res.Data == nil {
				t.Fatalf("ok=%v data=%v, want ok and an array: %s", res.OK, res.Data, a.body)
			}
			if len(res.Data) != tt.n || (tt.n > 0 && res.Data[0].Name != tt.first) {
				t.Errorf("got %d items starting %+v, want %d starting %s", len(res.Data), res.Data, tt.n, tt.first)
			}
			if got := a.header.Get("X-Total-Count"); got != strconv.Itoa(tt.total) {
				t.Errorf("X-Total-Count = %q, want %d", got, tt.total)
			}
			if got := a.header.Get("Link"); got != tt.link {
				t.Errorf("Link\n got %s\nwant %s", got, tt.link)
			}
			wantExpose := "X-Total-Count"
			if tt.exposeLink {
				wantExpose = "Link, X-Total-Count"
			}
			if got := a.header.Get("Access-Control-Expose-Headers"); got != wantExpose {
				t.Errorf("Access-Control-Expose-Headers = %q, want %q", got, wantExpose)
			}
		})
	}
}

// TestPullListPagination pages through 31 pull requests, newest first.
func TestPullListPagination(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	r, err := e.CreateRepo("team", "project", RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("main", map[string][]byte{"a": []byte("a\n")}, nil, "base"); err != nil {
		t.Fatal(err)
	}
	if err := r.Branch("topic", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("topic", map[string][]byte{"b": []byte("b\n")}, nil, "topic"); err != nil {
		t.Fatal(err)
	}
	for i := range 31 {
		if _, err := e.CreatePull("team", "project", PullOptions{Head: "topic", Base: "main", Title: "pr " + strconv.Itoa(i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		query       string
		first, n    int
		wantLinkRel []string
	}{
		{"", 31, 30, []string{"next", "last"}},
		{"?page=2", 1, 1, []string{"first", "prev"}},
		{"?limit=100", 31, 31, nil},
		{"?state=open&limit=5&page=3", 21, 5, []string{"next", "last", "first", "prev"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			a := get(t, e, "/api/v1/repos/team/project/pulls"+tt.query, "")
			pulls := decode[[]struct {
				Number int `json:"number"`
			}](t, a)
			if len(pulls) != tt.n || pulls[0].Number != tt.first {
				t.Errorf("got %d pulls starting #%d, want %d starting #%d", len(pulls), pulls[0].Number, tt.n, tt.first)
			}
			if got := a.header.Get("X-Total-Count"); got != "31" {
				t.Errorf("X-Total-Count = %q, want 31", got)
			}
			rels := linkRels(a.header.Get("Link"))
			if fmt.Sprint(rels) != fmt.Sprint(tt.wantLinkRel) {
				t.Errorf("Link rels = %v, want %v (%s)", rels, tt.wantLinkRel, a.header.Get("Link"))
			}
		})
	}
}

// linkRels lists the rel of each link of a Link header (URLs hold no commas:
// the query is re-encoded).
func linkRels(h string) []string {
	var rels []string
	for _, part := range strings.Split(h, ",") {
		if _, rel, ok := strings.Cut(part, `; rel="`); ok {
			rels = append(rels, strings.TrimSuffix(rel, `"`))
		}
	}
	return rels
}

// TestLinkModes: every list route sends Forgejo's Link by default, with
// LinkOnlyWhileMore only on a page with a next one, with LinkNone never;
// X-Total-Count always.
func TestLinkModes(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	for i := range 61 {
		if _, err := e.CreateRepo("team", fmt.Sprintf("r%02d", i), RepoOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		mode     LinkMode
		page     int
		n        int
		wantRels []string
	}{
		{LinkOnlyWhileMore, 1, 30, []string{"next", "last"}},
		{LinkOnlyWhileMore, 2, 30, []string{"next", "last", "first", "prev"}},
		{LinkOnlyWhileMore, 3, 1, nil},
		{LinkOnlyWhileMore, 4, 0, nil},
		{LinkNone, 1, 30, nil},
		{LinkNone, 2, 30, nil},
		{LinkNone, 3, 1, nil},
		{LinkNone, 4, 0, nil},
		{LinkForgejo, 1, 30, []string{"next", "last"}},
		{LinkForgejo, 3, 1, []string{"first", "prev"}},
		{LinkForgejo, 4, 0, []string{"first", "prev"}},
	} {
		e.SetLinkMode(tt.mode)
		a := get(t, e, fmt.Sprintf("/api/v1/repos/search?q=r&limit=30&page=%d", tt.page), "")
		data := decode[struct {
			Data []json.RawMessage `json:"data"`
		}](t, a).Data
		if rels := linkRels(a.header.Get("Link")); len(data) != tt.n || fmt.Sprint(rels) != fmt.Sprint(tt.wantRels) || a.header.Get("X-Total-Count") != "61" {
			t.Errorf("%v, page %d: %d items, Link rels %v, total %q; want %d, %v, 61", tt.mode, tt.page, len(data), rels, a.header.Get("X-Total-Count"), tt.n, tt.wantRels)
		}
		if _, ok := a.header["Link"]; ok != (tt.wantRels != nil) {
			t.Errorf("%v, page %d: Link header present = %v", tt.mode, tt.page, ok)
		}
	}
}
