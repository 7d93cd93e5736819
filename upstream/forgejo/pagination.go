package forgejo

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// newListing derives the continuation of a native list answer. Forgejo may clamp
// the width we asked for, so the Link header decides when it holds at least
// one well-formed link: rel="next" means more, its absence means none.
// Otherwise (no Link header, or one that cannot be parsed) X-Total-Count
// decides, measured by seenThrough against what the page actually held
// (docs/architecture.md#agent-work-grant-contract: has_more is "right even
// when Core clamps the width"). Link URLs are parsed for their rel only and
// never followed. The page is the caller's (any positive int64): the last
// representable page has no next one, whatever Core says, and the arithmetic
// never wraps around.
func newListing[T any](items []T, page int64, h http.Header) *Listing[T] {
	p := &Listing[T]{Items: items, Page: page}
	if total, ok := totalCount(h); ok {
		p.Total = &total
	}
	if rels, ok := linkRels(h); ok {
		p.HasMore = rels["next"]
	} else if p.Total != nil {
		p.HasMore = len(items) > 0 && seenThrough(page, len(items), *p.Total) < *p.Total
	}
	if page == math.MaxInt64 {
		p.HasMore = false
	}
	if p.HasMore {
		next := page + 1
		p.NextPage = &next
	}
	return p
}

// seenThrough is the fewest items the pages up to and including page hold,
// when this page held n of total and no Link said whether more follow.
//
// A page that holds exactly what remains of total at PageWidth, the width
// every list asks for (listQuery) — (page−1)·PageWidth + n = total — is
// the last page: total. That is what any forge that honours the width
// answers last, Link or not (page 3 of 61 holds 1), and a forge that sends
// Link only while more pages exist sends none there.
//
// Otherwise the width is unknown — Core may have clamped it — but every
// page is at least as wide as the n items it returned, so page·n: when it
// is under the total there may be more, and a caller that asks for a page
// past the end gets an empty one with has_more false, one request later.
// (Page 1 is exact: it held n of the total.) A page of Core clamped to a
// width w that happens to equal that remainder reads as the last; Forgejo
// and Gitea send a Link whenever another page exists, which then decides.
// Products over int64 saturate: no total can be that large.
func seenThrough(page int64, n int, total int64) int64 {
	if page < 1 || n < 1 {
		return 0
	}
	if page-1 <= (math.MaxInt64-int64(n))/PageWidth && (page-1)*PageWidth+int64(n) == total {
		return total
	}
	if page > math.MaxInt64/int64(n) {
		return math.MaxInt64
	}
	return page * int64(n)
}

func totalCount(h http.Header) (int64, bool) {
	v := h.Values("X-Total-Count")
	if len(v) != 1 {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// linkRels returns the set of rel values of the well-formed links in RFC
// 8288 Link headers; ok is false when there is no well-formed link at all.
func linkRels(h http.Header) (map[string]bool, bool) {
	rels := map[string]bool{}
	found := false
	for _, v := range h.Values("Link") {
		for _, link := range splitOutside(v, ',') {
			parts := splitOutside(link, ';')
			target := strings.TrimSpace(parts[0])
			if len(parts) < 2 || len(target) < 2 || target[0] != '<' || target[len(target)-1] != '>' {
				continue
			}
			if _, err := url.Parse(target[1 : len(target)-1]); err != nil {
				continue
			}
			found = true
			for _, param := range parts[1:] {
				k, val, ok := strings.Cut(strings.TrimSpace(param), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(val), `"`)) {
					rels[strings.ToLower(rel)] = true
				}
			}
		}
	}
	return rels, found
}

// splitOutside splits a Link header value on sep (',' between links, ';'
// between a link's parameters) where sep is neither inside a <…> target
// nor inside a "…" quoted parameter value.
func splitOutside(v string, sep byte) []string {
	var out []string
	inTarget, inQuote, start := false, false, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case inQuote:
			if c == '\\' {
				i++ // the escaped character
			} else if c == '"' {
				inQuote = false
			}
		case inTarget:
			inTarget = c != '>'
		case c == '<':
			inTarget = true
		case c == '"':
			inQuote = true
		case c == sep:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}
