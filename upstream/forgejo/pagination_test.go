package forgejo

import (
	"math"
	"net/http"
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
		// Without Link, a page holding exactly what remains at the width
		// asked for (30) is the last: page 3 of 61 holds 1, as a forge
		// that sends Link only while more pages exist answers it.
		{"total only, the remainder at width 30 on page 3", n(1), 3, nil, []string{"61"}, false, 61},
		{"total only, page 2 of 34 holds the last 4", n(4), 2, nil, []string{"34"}, false, 34},
		{"total only, page 2 of 31 holds the last 1", n(1), 2, nil, []string{"31"}, false, 31},
		{"total only, page 2 of 60 is full", n(30), 2, nil, []string{"60"}, false, 60},
		{"malformed Link, the remainder at width 30", n(1), 3, []string{`garbage`}, []string{"61"}, false, 61},
		// A short page that is not that remainder: Core clamped the width
		// (to 1 here), so more may follow; the next page says.
		{"total only, a short page that is not the remainder", n(1), 3, nil, []string{"62"}, true, 62},
		{"total only, page 3 of 61 holding 2", n(2), 3, nil, []string{"61"}, true, 61},
		// The one reading that stays ambiguous without Link: a page of a
		// width Core clamped to 10 that equals the remainder at 30 (page
		// 2 of 40) reads as the last (docs/tools.md).
		{"clamped to 10 without Link, page 2 of 40", n(10), 2, nil, []string{"40"}, false, 40},
		{"the remainder on a page near the last int64 one", n(7), math.MaxInt64/30 + 1, nil, []string{"9223372036854775807"}, false, math.MaxInt64},
		{"a short page near the last int64 one", n(1), math.MaxInt64 / 30, nil, []string{"9223372036854775807"}, true, math.MaxInt64},
		{"a page past where the remainder could be", n(7), math.MaxInt64 - 1, nil, []string{"9223372036854775807"}, false, math.MaxInt64},
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
