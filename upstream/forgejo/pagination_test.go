package forgejo

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestNewPage(t *testing.T) {
	const base = "https://forge.example/api/v1/repos/search"
	n := func(k int) []int { return make([]int, k) }
	cases := []struct {
		name      string
		items     []int
		page      int64
		link      []string
		total     []string
		wantMore  bool
		wantTotal int64 // -1: no total
	}{
		{"no headers", n(30), 1, nil, nil, false, -1},
		{"Link next", n(30), 1, []string{`<` + base + `?page=2&limit=30>; rel="next", <` + base + `?page=5&limit=30>; rel="last"`}, []string{"150"}, true, 150},
		{"Link without next on the last page", n(10), 5, []string{`<` + base + `?page=1>; rel="first", <` + base + `?page=4>; rel="prev"`}, []string{"130"}, false, 130},
		{"Link decides over a total that disagrees", n(30), 2, []string{`<` + base + `?page=1>; rel="prev"`}, []string{"1000"}, false, 1000},
		// Core clamped the width to 10: page 3 of 10 items with 35 in
		// total has a next page, which the requested width of 30 would deny.
		{"clamped width: Link decides", n(10), 3, []string{`<` + base + `?page=4&limit=10>; rel="next"`}, []string{"35"}, true, 35},
		{"commas inside the target", n(30), 1, []string{`<` + base + `?q=a,b,c&page=2>; rel="next"`}, nil, true, -1},
		{"commas inside targets of several links", n(30), 2, []string{`<` + base + `?q=a,b&page=1>; rel="prev", <` + base + `?q=a,b&page=3>; rel="next"`}, nil, true, -1},
		{"comma inside a quoted parameter", n(30), 1, []string{`<` + base + `?page=2>; title="one, two"; rel="next"`}, nil, true, -1},
		{"angle bracket inside a quoted parameter", n(30), 1, []string{`<` + base + `?page=1>; title="<"; rel="first", <` + base + `?page=2>; rel="next"`}, nil, true, -1},
		{"unquoted rel", n(30), 1, []string{`<` + base + `?page=2>; rel=next`}, nil, true, -1},
		{"several rels", n(30), 1, []string{`<` + base + `?page=2>; rel="next last"`}, nil, true, -1},
		{"rel case-insensitive", n(30), 1, []string{`<` + base + `?page=2>; REL="Next"`}, nil, true, -1},
		{"next in a second Link header", n(30), 1, []string{`<` + base + `?page=5>; rel="last"`, `<` + base + `?page=2>; rel="next"`}, nil, true, -1},
		{"rel that only contains next", n(30), 1, []string{`<` + base + `?page=2>; rel="nextpage"`}, []string{"30"}, false, 30},
		{"next without angle brackets is not a link", n(30), 1, []string{base + `?page=2; rel="next"`}, nil, false, -1},
		// A Link header with no well-formed link says nothing; the total decides.
		{"malformed Link, total says more", n(30), 1, []string{`garbage`}, []string{"45"}, true, 45},
		{"malformed Link, total says no more", n(15), 1, []string{`<unterminated; rel="next"`}, []string{"15"}, false, 15},
		{"empty Link, total says more", n(30), 1, []string{``}, []string{"31"}, true, 31},
		{"total only, more", n(30), 1, nil, []string{"31"}, true, 31},
		{"total only, exactly full", n(30), 1, nil, []string{"30"}, false, 30},
		{"total only, page 2 of 3", n(30), 2, nil, []string{"61"}, true, 61},
		{"total only, page 2 of 60 is full", n(30), 2, nil, []string{"60"}, false, 60},
		// Without Link the total is a lower bound: page N of n items has
		// seen at least N·n, whatever width the forge used, so a short
		// page is followed by one more (empty) page.
		{"total only, page 3 of 61 holding 1", n(1), 3, nil, []string{"61"}, true, 61},
		{"malformed Link, page 3 of 61 holding 1", n(1), 3, []string{`garbage`}, []string{"61"}, true, 61},
		{"total only, page 2 of 34 holding 4", n(4), 2, nil, []string{"34"}, true, 34},
		// A page Core clamped to 10 that equals the remainder at 30
		// (page 2 of 40) is not the last: the listing used to stop there.
		{"clamped to 10 without Link, page 2 of 40", n(10), 2, nil, []string{"40"}, true, 40},
		{"a short page near the last int64 one", n(1), math.MaxInt64 / 30, nil, []string{"9223372036854775807"}, true, math.MaxInt64},
		{"a page whose items seen are just under the total", n(7), math.MaxInt64/7 - 1, nil, []string{"9223372036854775807"}, true, math.MaxInt64},
		{"a page whose items seen reach the total", n(7), math.MaxInt64 / 7, nil, []string{"9223372036854775806"}, false, math.MaxInt64 - 1},
		{"a page whose items seen overflow", n(7), math.MaxInt64 - 1, nil, []string{"9223372036854775807"}, false, math.MaxInt64},
		{"total only, page 1 short", n(12), 1, nil, []string{"12"}, false, 12},
		{"total only, page 1 clamped", n(10), 1, nil, []string{"35"}, true, 35},
		// Core clamped the width to 10 and sent no Link: 35 in total.
		{"clamped to 10 without Link, page 2", n(10), 2, nil, []string{"35"}, true, 35},
		{"clamped to 10 without Link, page 3", n(10), 3, nil, []string{"35"}, true, 35},
		{"clamped to 10 without Link, page 4 of 5 items", n(5), 4, nil, []string{"35"}, true, 35},
		{"clamped to 10 without Link, empty page 5", n(0), 5, nil, []string{"35"}, false, 35},
		{"every item seen", n(7), 5, nil, []string{"35"}, false, 35},
		{"total only, empty page", n(0), 9, nil, []string{"500"}, false, 500},
		{"total zero", n(0), 1, nil, []string{"0"}, false, 0},
		{"total with spaces", n(30), 1, nil, []string{" 31 "}, true, 31},
		{"total negative ignored", n(30), 1, nil, []string{"-1"}, false, -1},
		{"total not a number ignored", n(30), 1, nil, []string{"31abc"}, false, -1},
		{"total overflow ignored", n(30), 1, nil, []string{"99999999999999999999"}, false, -1},
		{"two totals ignored", n(30), 1, nil, []string{"31", "31"}, false, -1},
		// The caller picks the page (any positive int64): the last
		// representable page has no next one, and nothing wraps around
		// (FuzzLinkHeader found next_page -9223372036854775808 here).
		{"Link next on the last int64 page", n(30), math.MaxInt64, []string{`<` + base + `?page=2>; rel="next"`}, nil, false, -1},
		{"total on the last int64 page", n(30), math.MaxInt64, nil, []string{"9223372036854775807"}, false, math.MaxInt64},
		{"total where the items seen overflow", n(30), math.MaxInt64 / 10, nil, []string{"9223372036854775807"}, false, math.MaxInt64},
		{"Link next on the page before the last", n(30), math.MaxInt64 - 1, []string{`<` + base + `?page=2>; rel="next"`}, nil, true, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.link {
				h.Add("Link", v)
			}
			for _, v := range tc.total {
				h.Add("X-Total-Count", v)
			}
			p := newListing(tc.items, tc.page, h)
			if p.HasMore != tc.wantMore {
				t.Errorf("HasMore = %v, want %v", p.HasMore, tc.wantMore)
			}
			switch {
			case tc.wantMore && (p.NextPage == nil || *p.NextPage != tc.page+1):
				t.Errorf("NextPage = %v, want %d", p.NextPage, tc.page+1)
			case !tc.wantMore && p.NextPage != nil:
				t.Errorf("NextPage = %d, want null", *p.NextPage)
			}
			switch {
			case tc.wantTotal < 0 && p.Total != nil:
				t.Errorf("Total = %d, want null", *p.Total)
			case tc.wantTotal >= 0 && (p.Total == nil || *p.Total != tc.wantTotal):
				t.Errorf("Total = %v, want %d", p.Total, tc.wantTotal)
			}
			if p.Page != tc.page || len(p.Items) != len(tc.items) {
				t.Errorf("page %d with %d items", p.Page, len(p.Items))
			}
		})
	}
}

// nativeLink says which Link a forge sends with a list page.
type nativeLink int

const (
	linkForgejo       nativeLink = iota // Forgejo and Gitea: next/last while more, first/prev after page 1, none for a single page
	linkOnlyWhileMore                   // next/last while more, nothing else
	linkNone                            // never a Link (a proxy that drops it)
)

func (l nativeLink) String() string {
	return [...]string{"Forgejo's Link", "Link only while more", "no Link"}[l]
}

// nativePage is what a forge answers for page of a list of total items
// at width (the width it clamped the gateway's 30 to): the page's items
// and its Link and X-Total-Count, rels in Forgejo's order (genAPILinks; a
// page past the end counts as the last for first and prev, as Forgejo's
// paginator clamps it).
func nativePage(width, total, page int, link nativeLink) ([]int, http.Header) {
	start := min((page-1)*width, total)
	items := make([]int, min(start+width, total)-start)
	for i := range items {
		items[i] = start + i
	}
	pages := max((total+width-1)/width, 1)
	current := min(page, pages)
	var rels []string
	add := func(p int, rel string) {
		rels = append(rels, fmt.Sprintf(`<https://forge.example/api/v1/repos/search?limit=%d&page=%d>; rel=%q`, width, p, rel))
	}
	if total > current*width {
		add(current+1, "next")
		add(pages, "last")
	}
	if current > 1 && link == linkForgejo {
		add(1, "first")
		add(current-1, "prev")
	}
	h := http.Header{"X-Total-Count": {strconv.Itoa(total)}}
	if len(rels) > 0 && link != linkNone {
		h.Set("Link", strings.Join(rels, ","))
	}
	return items, h
}

// TestContinuationRule pins the one continuation rule of every list over
// (width, total, page, Link): a Link decides by rel="next"; without one,
// has_more holds while page·items < total, so no listing stops early
// even when the width the forge answered is not the 30 asked for (width
// 10 of 40 and width 20 of 50 without Link used to stop on page 2); an
// empty page ends the listing, and a page past the end has no more.
func TestContinuationRule(t *testing.T) {
	cases := []struct {
		width, total, page int
		link               nativeLink
		items              int
		want               bool
	}{
		// Width 10 (Core clamped the 30 asked for), 40 in all.
		{10, 40, 1, linkForgejo, 10, true},
		{10, 40, 2, linkForgejo, 10, true},
		{10, 40, 4, linkForgejo, 10, false},
		{10, 40, 5, linkForgejo, 0, false},
		{10, 40, 1, linkNone, 10, true},
		{10, 40, 2, linkNone, 10, true},
		{10, 40, 3, linkNone, 10, true},
		{10, 40, 4, linkNone, 10, false},
		{10, 40, 5, linkNone, 0, false},
		{10, 40, 2, linkOnlyWhileMore, 10, true},
		{10, 40, 4, linkOnlyWhileMore, 10, false},
		// Width 20, 50 in all: the short last page has no Link without
		// Forgejo's, so one empty page follows it.
		{20, 50, 2, linkForgejo, 20, true},
		{20, 50, 3, linkForgejo, 10, false},
		{20, 50, 1, linkNone, 20, true},
		{20, 50, 2, linkNone, 20, true},
		{20, 50, 3, linkNone, 10, true},
		{20, 50, 4, linkNone, 0, false},
		{20, 50, 3, linkOnlyWhileMore, 10, true},
		{20, 50, 4, linkOnlyWhileMore, 0, false},
		// Width 30 (as asked), 61 in all.
		{30, 61, 1, linkForgejo, 30, true},
		{30, 61, 2, linkForgejo, 30, true},
		{30, 61, 3, linkForgejo, 1, false},
		{30, 61, 4, linkForgejo, 0, false},
		{30, 61, 2, linkNone, 30, true},
		{30, 61, 3, linkNone, 1, true},
		{30, 61, 4, linkNone, 0, false},
		{30, 61, 3, linkOnlyWhileMore, 1, true},
		// A single page: Forgejo sends no Link at all.
		{30, 12, 1, linkForgejo, 12, false},
		{30, 12, 1, linkNone, 12, false},
		{30, 30, 1, linkForgejo, 30, false},
		{10, 10, 1, linkNone, 10, false},
		{30, 0, 1, linkForgejo, 0, false},
		{30, 12, 2, linkForgejo, 0, false},
		{30, 12, 2, linkNone, 0, false},
		// Width 10 of 35: the short page 4 is followed by an empty one.
		{10, 35, 4, linkForgejo, 5, false},
		{10, 35, 4, linkNone, 5, true},
		{10, 35, 5, linkNone, 0, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("width %d of %d page %d %v", tc.width, tc.total, tc.page, tc.link), func(t *testing.T) {
			items, h := nativePage(tc.width, tc.total, tc.page, tc.link)
			if len(items) != tc.items {
				t.Fatalf("the forge answered %d items, the case says %d", len(items), tc.items)
			}
			p := newListing(items, int64(tc.page), h)
			if p.HasMore != tc.want || (p.NextPage != nil) != tc.want || (tc.want && *p.NextPage != int64(tc.page)+1) {
				t.Fatalf("has_more %v next_page %v, want has_more %v (Link %q)", p.HasMore, p.NextPage, tc.want, h.Get("Link"))
			}
			if p.Total == nil || *p.Total != int64(tc.total) {
				t.Fatalf("total %v, want %d", p.Total, tc.total)
			}
		})
	}
}

// TestContinuationWalk follows next_page from page 1 at every width a
// forge may clamp to, for every total up to 130 and every Link habit: the
// walk reads every item exactly once and stops only after the last one;
// it costs one empty page more than the forge's pages exactly when the
// last page is short, there is more than one, and no Link came with it.
func TestContinuationWalk(t *testing.T) {
	for _, link := range []nativeLink{linkForgejo, linkOnlyWhileMore, linkNone} {
		for _, width := range []int{1, 2, 7, 10, 20, 29, 30} {
			for total := 0; total <= 130; total++ {
				pages := max((total+width-1)/width, 1)
				want := pages
				if link != linkForgejo && pages > 1 && total%width != 0 {
					want++
				}
				var got []int
				walked, more := 0, true
				for page := int64(1); more && walked <= want; walked++ {
					items, h := nativePage(width, total, int(page), link)
					got = append(got, items...)
					p := newListing(items, page, h)
					if more = p.HasMore; more {
						page = *p.NextPage
					}
				}
				all := make([]int, total)
				for i := range all {
					all[i] = i
				}
				if more || walked != want || !slices.Equal(got, all) {
					t.Fatalf("%v, width %d of %d: %d pages (still more: %v) read %v, want %d pages reading each once", link, width, total, walked, more, got, want)
				}
			}
		}
	}
}
