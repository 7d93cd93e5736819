package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
)

// TestSearchLastPage: an anonymous search_repositories for a term with 61
// hits, at the gateway's width of 30, reads all 61 once and never stops
// early (docs/tools.md#continuation). With Forgejo's Link (first and prev
// on the last page, no next) it ends on page 3 — one item, has_more false,
// next_page null — in three upstream requests. Without a Link on the last
// page (a forge that sends Link only while more pages exist, or none at
// all) X-Total-Count is only a lower bound: page 3 has more, and the empty
// page 4 ends the listing, in four requests.
func TestSearchLastPage(t *testing.T) {
	st := startForgejoStack(t, nil)
	var want []string
	for i := range 61 {
		name := fmt.Sprintf("lastpage-%02d", i)
		if _, err := st.emu.CreateRepo(st.demo.Owner, name, forgejoemu.RepoOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, st.demo.Owner+"/"+name)
	}
	s := st.gw.Connect(t, "/mcp/forgejo", "")
	for _, mode := range []struct {
		name  string
		link  forgejoemu.LinkMode
		pages int
	}{
		{"Forgejo's Link", forgejoemu.LinkForgejo, 3},
		{"Link only while more", forgejoemu.LinkOnlyWhileMore, 4},
		{"no Link", forgejoemu.LinkNone, 4},
	} {
		t.Run(mode.name, func(t *testing.T) {
			st.emu.SetLinkMode(mode.link)
			defer st.emu.SetLinkMode(forgejoemu.LinkForgejo)
			st.emu.ResetRequests()
			var got []string
			args := map[string]any{"q": "lastpage"}
			for page := 1; ; page++ {
				out, isErr := callTool(t, s, "search_repositories", args)
				if isErr {
					t.Fatalf("page %d: %v", page, out)
				}
				items, _ := out["items"].([]any)
				for _, it := range items {
					got = append(got, it.(map[string]any)["full_name"].(string))
				}
				last := page == mode.pages
				wantNext := any(float64(page + 1))
				if last {
					wantNext = nil
				}
				if out["page"] != float64(page) || out["total"] != float64(61) || out["has_more"] != !last || out["next_page"] != wantNext {
					t.Fatalf("page %d of %d (%d items): page %v total %v has_more %v next_page %v", page, mode.pages, len(items), out["page"], out["total"], out["has_more"], out["next_page"])
				}
				if last {
					break
				}
				args["page"] = out["next_page"]
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%d repositories read, want the 61 once each: %v", len(got), got)
			}
			if n := len(st.emu.Requests()); n != mode.pages {
				t.Fatalf("%d upstream requests for %d pages", n, mode.pages)
			}
		})
	}
}
