package forgejoemu

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Forgejo's [api] defaults: DEFAULT_PAGING_NUM and MAX_RESPONSE_ITEMS.
const (
	defaultPagingNum = 30
	maxResponseItems = 50
)

// listOptions is Forgejo's utils.GetListOptions: the raw page (0 when absent
// or not an integer, like ctx.FormInt) and the corrected page size.
type listOptions struct {
	rawPage  int
	pageSize int
}

func parseListOptions(r *http.Request) listOptions {
	q := r.URL.Query()
	return listOptions{rawPage: formInt(q, "page"), pageSize: correctPageSize(formInt(q, "limit"))}
}

// formInt is ctx.FormInt: strconv.Atoi of the first value, 0 on error.
func formInt(q url.Values, key string) int {
	n, _ := strconv.Atoi(q.Get(key))
	return n
}

// correctPageSize is convert.ToCorrectPageSize: <=0 → 30, >50 → 50.
func correctPageSize(size int) int {
	if size <= 0 {
		return defaultPagingNum
	}
	if size > maxResponseItems {
		return maxResponseItems
	}
	return size
}

// bounds returns the [start, end) slice of total items for the page, like
// ListOptions.GetSkipTake (page <= 0 is page 1); past the end it is empty.
func (o listOptions) bounds(total int) (start, end int) {
	page := o.rawPage
	if page <= 0 {
		page = 1
	}
	// Guard the multiplication: a huge page is simply past the end.
	if page-1 > total/o.pageSize {
		return total, total
	}
	start = min((page-1)*o.pageSize, total)
	end = min(start+o.pageSize, total)
	return start, end
}

// paginator is Forgejo's modules/paginator as the API's link header uses it.
type paginator struct{ total, pagingNum, current int }

func newPaginator(total, pagingNum, current int) paginator {
	if pagingNum <= 0 {
		pagingNum = 1
	}
	if current <= 0 {
		current = 1
	}
	p := paginator{total: total, pagingNum: pagingNum, current: current}
	if p.current > p.totalPages() {
		p.current = p.totalPages()
	}
	return p
}

func (p paginator) totalPages() int {
	if p.total == 0 {
		return 1
	}
	return (p.total + p.pagingNum - 1) / p.pagingNum
}

func (p paginator) hasNext() bool     { return p.total > p.current*p.pagingNum }
func (p paginator) hasPrevious() bool { return p.current > 1 }
func (p paginator) isFirst() bool     { return p.current == 1 }

func (p paginator) isLast() bool {
	if p.total == 0 {
		return true
	}
	return p.total > (p.current-1)*p.pagingNum && !p.hasNext()
}

// linkHeader is Forgejo's genAPILinks joined with ",": next, last, first,
// prev, each the request URL with page replaced (query re-encoded, so keys
// sorted) on the absolute origin.
func linkHeader(origin string, reqURL *url.URL, total, pageSize, rawPage int) string {
	p := newPaginator(total, pageSize, rawPage)
	var links []string
	add := func(page int, rel string) {
		u := *reqURL
		q := u.Query()
		q.Set("page", strconv.Itoa(page))
		u.RawQuery = q.Encode()
		links = append(links, fmt.Sprintf("<%s%s>; rel=%q", origin, u.RequestURI(), rel))
	}
	if p.hasNext() {
		add(p.current+1, "next")
	}
	if !p.isLast() {
		add(p.totalPages(), "last")
	}
	if !p.isFirst() {
		add(1, "first")
	}
	if p.hasPrevious() {
		add(p.current-1, "prev")
	}
	return strings.Join(links, ",")
}

// LinkMode selects which Link header the list routes send.
type LinkMode int

// The Link modes.
const (
	// LinkForgejo is Forgejo's and Gitea's: next and last while another
	// page exists, first and prev on every later page (the last and any
	// past the end too), and no Link when everything fits on one page.
	LinkForgejo LinkMode = iota
	// LinkOnlyWhileMore sends Link only on a page that has a next one, as
	// forges (and proxies) other than Forgejo and Gitea do.
	LinkOnlyWhileMore
	// LinkNone never sends Link, as a Core behind a proxy that drops it.
	LinkNone
)

func (m LinkMode) String() string {
	switch m {
	case LinkForgejo:
		return "Forgejo's Link"
	case LinkOnlyWhileMore:
		return "Link only while more"
	case LinkNone:
		return "no Link"
	}
	return "LinkMode(" + strconv.Itoa(int(m)) + ")"
}

// SetLinkMode sets the Link header of every list route; X-Total-Count is
// sent whatever the mode. LinkForgejo is the default.
func (e *Emulator) SetLinkMode(m LinkMode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.linkMode = m
}

// setPaginationHeaders does what Forgejo's list routes do before answering:
// SetLinkHeader(total, pageSize) then SetTotalCountHeader(total), with the
// Link the LinkMode says.
func (e *Emulator) setPaginationHeaders(w http.ResponseWriter, r *http.Request, total int, o listOptions) {
	h := w.Header()
	e.mu.Lock()
	mode := e.st.linkMode
	e.mu.Unlock()
	link := linkHeader(e.origin, r.URL, total, o.pageSize, o.rawPage)
	switch {
	case mode == LinkNone:
		link = ""
	case mode == LinkOnlyWhileMore && !newPaginator(total, o.pageSize, o.rawPage).hasNext():
		link = ""
	}
	if link != "" {
		h.Set("Link", link)
		appendExposeHeaders(h, "Link")
	}
	h.Set("X-Total-Count", strconv.Itoa(total))
	appendExposeHeaders(h, "X-Total-Count")
}
