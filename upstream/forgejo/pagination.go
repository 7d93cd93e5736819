package forgejo

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// newPage derives the continuation of a native list page. Forgejo may clamp
// the width we asked for, so the Link header decides when present: rel="next"
// means more, its absence means none. Without a Link header X-Total-Count
// decides, counting the requested width. Link URLs are parsed for their rel
// only and never followed.
func newPage[T any](items []T, page int64, h http.Header) *Page[T] {
	p := &Page[T]{Items: items, Page: page}
	if total, ok := totalCount(h); ok {
		p.Total = &total
	}
	if rels, ok := linkRels(h); ok {
		p.HasMore = rels["next"]
	} else if p.Total != nil {
		p.HasMore = len(items) > 0 && (page-1)*PageWidth+int64(len(items)) < *p.Total
	}
	if p.HasMore {
		next := page + 1
		p.NextPage = &next
	}
	return p
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

// linkRels returns the set of rel values in RFC 8288 Link headers; ok is
// false when no Link header is present.
func linkRels(h http.Header) (map[string]bool, bool) {
	values := h.Values("Link")
	if len(values) == 0 {
		return nil, false
	}
	rels := map[string]bool{}
	for _, v := range values {
		for _, link := range splitLinks(v) {
			target, params, found := strings.Cut(link, ";")
			target = strings.TrimSpace(target)
			if !found || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			if _, err := url.Parse(target[1 : len(target)-1]); err != nil {
				continue
			}
			for _, param := range strings.Split(params, ";") {
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
	return rels, true
}

// splitLinks splits a Link header value on the commas between links, not
// on commas inside <…> targets.
func splitLinks(v string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '<':
			depth++
		case '>':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	return append(out, v[start:])
}
