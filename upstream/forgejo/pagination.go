package forgejo

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// newListing derives the continuation of a native list answer, by the one
// rule every paginated tool follows (docs/tools.md#continuation): Link,
// when it holds at least one well-formed link, decides; otherwise
// X-Total-Count is a lower bound on what is left (continues). Link URLs are
// parsed for their rel only and never followed. The page is the caller's
// (any positive int64): the last representable page has no next one,
// whatever the forge says, and the arithmetic never wraps around.
func newListing[T any](items []T, page int64, h http.Header) *Listing[T] {
	p := &Listing[T]{Items: items, Page: page}
	if total, ok := totalCount(h); ok {
		p.Total = &total
	}
	rels, linked := linkRels(h)
	p.HasMore = page < math.MaxInt64 && continues(page, len(items), p.Total, linked, rels["next"])
	if p.HasMore {
		next := page + 1
		p.NextPage = &next
	}
	return p
}

// continues says whether a page after page may hold items, when page held
// n items of total (nil: no usable X-Total-Count) and linked says whether a
// well-formed Link came, next whether one of its links is rel="next".
//
// A Link is authoritative: Forgejo and Gitea send next (and last) while
// another page exists, first and prev on every later page, and no Link
// only when everything fits on one page; a forge may also send Link only
// while more pages exist. Either way next present means more, absent none,
// at whatever width the forge answered.
//
// Without Link the width is unknown: the forge may have clamped the 30 the
// gateway asks for (PageWidth), and a clamped page can look exactly like a
// short last page at 30 (page 2 of 40 at width 10 holds what remains of 40
// at 30). Every page up to this one was at least as wide as the n items it
// returned, so at least page·n items have been seen, and while page·n <
// total more may follow. That never stops a listing early; a short last
// page is followed by one empty page, and an empty page (as a page past
// the end answers) ends the listing.
func continues(page int64, n int, total *int64, linked, next bool) bool {
	if linked {
		return next
	}
	if total == nil || page < 1 || n < 1 {
		return false
	}
	if page > math.MaxInt64/int64(n) {
		return false // page·n overflows int64, so it exceeds any total
	}
	return page*int64(n) < *total
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
