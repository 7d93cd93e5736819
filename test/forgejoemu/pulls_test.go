package forgejoemu

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestPullList(t *testing.T) {
	t.Parallel()
	e, d := sharedDemo(t)
	tests := []struct {
		query  string
		status int
		want   string // indexes in order
	}{
		{"", 200, "[3 2 1]"}, // Forgejo lists every state when none is given
		{"?state=open", 200, "[3 1]"},
		{"?state=closed", 200, "[2]"},
		{"?state=all", 200, "[3 2 1]"},
		{"?state=bogus", 200, "[3 2 1]"},
		{"?state=%20open%20", 200, "[3 1]"}, // FormTrim
		{"?sort=oldest", 200, "[1 2 3]"},
		{"?sort=recentupdate", 200, "[2 3 1]"},
		{"?poster=" + d.Reader, 200, "[3]"},
		{"?poster=ghost", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			a := get(t, e, "/api/v1/repos/demo/gateway/pulls"+tt.query, "")
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			if tt.status != 200 {
				return
			}
			var got []int64
			for _, p := range decode[[]apiPull](t, a) {
				got = append(got, p.Index)
			}
			if fmt.Sprint(got) != tt.want {
				t.Errorf("pulls %v, want %s", got, tt.want)
			}
		})
	}
}

func TestPullGet(t *testing.T) {
	t.Parallel()
	e, d := sharedDemo(t)
	repo, _ := e.Repo(d.Owner, d.PublicRepo)
	html := e.URL() + "/demo/gateway/pulls/"

	open := decode[apiPull](t, get(t, e, "/api/v1/repos/demo/gateway/pulls/1", ""))
	assign := []struct {
		name      string
		got, want any
	}{
		{"id", open.ID, int64(firstPullID)},
		{"number", open.Index, d.OpenPull},
		{"state", open.State, "open"},
		{"title", open.Title, "Add assets"},
		{"user", open.Poster.UserName, d.Owner},
		{"html_url", open.HTMLURL, html + "1"},
		{"url", open.URL, html + "1"},
		{"diff_url", open.DiffURL, html + "1.diff"},
		{"patch_url", open.PatchURL, html + "1.patch"},
		{"head.label", open.Head.Name, "feature/assets"},
		{"head.ref", open.Head.Ref, "feature/assets"},
		{"head.repo_id", open.Head.RepoID, repo.ID()},
		{"base.label", open.Base.Name, "main"},
		{"base.repo.full_name", open.Base.Repository.FullName, "demo/gateway"},
		{"merged", open.HasMerged, false},
		{"merged_at", open.Merged, (*time.Time)(nil)},
		{"closed_at", open.Closed, (*time.Time)(nil)},
		{"labels", len(open.Labels), 0},
	}
	for _, a := range assign {
		if fmt.Sprint(a.got) != fmt.Sprint(a.want) {
			t.Errorf("%s = %v, want %v", a.name, a.got, a.want)
		}
	}
	tip, _ := repo.Tip("feature/assets")
	if open.Head.Sha != tip || open.MergeBase == "" || open.MergeBase == open.Base.Sha {
		t.Errorf("head.sha %s (tip %s), merge_base %s, base.sha %s", open.Head.Sha, tip, open.MergeBase, open.Base.Sha)
	}

	closed := decode[apiPull](t, get(t, e, "/api/v1/repos/demo/gateway/pulls/2", ""))
	if closed.State != "closed" || !closed.HasMerged || closed.Merged == nil || closed.Closed == nil ||
		closed.MergedCommitID == nil || *closed.MergedCommitID != closed.Head.Sha || closed.MergedBy == nil || closed.MergedBy.UserName != d.Owner {
		t.Errorf("merged pull: %+v", closed)
	}
	empty := decode[apiPull](t, get(t, e, "/api/v1/repos/demo/gateway/pulls/3", ""))
	if empty.ChangedFiles != 0 || empty.MergeBase != empty.Head.Sha {
		t.Errorf("empty pull: changed %d, merge base %s, head %s", empty.ChangedFiles, empty.MergeBase, empty.Head.Sha)
	}

	for _, idx := range []string{"0", "4", "-1", "abc", "1.5"} {
		if a := get(t, e, "/api/v1/repos/demo/gateway/pulls/"+idx, ""); a.status != 404 {
			t.Errorf("pulls/%s: status %d", idx, a.status)
		}
	}
}

func TestPullState(t *testing.T) {
	t.Parallel()
	e, d := seeded(t)
	if err := e.SetPullState(d.Owner, d.PublicRepo, d.ClosedPull, "open", false); !errors.Is(err, ErrInvalid) {
		t.Errorf("reopening a merged pull: %v", err)
	}
	if err := e.SetPullState(d.Owner, d.PublicRepo, d.EmptyPull, "open", true); !errors.Is(err, ErrInvalid) {
		t.Errorf("open and merged: %v", err)
	}
	if err := e.SetPullState(d.Owner, d.PublicRepo, d.EmptyPull, "shut", false); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad state: %v", err)
	}
	path := fmt.Sprintf("/api/v1/repos/demo/gateway/pulls/%d", d.EmptyPull)
	if err := e.SetPullState(d.Owner, d.PublicRepo, d.EmptyPull, "closed", false); err != nil {
		t.Fatal(err)
	}
	if p := decode[apiPull](t, get(t, e, path, "")); p.State != "closed" || p.Closed == nil || p.HasMerged {
		t.Errorf("closed: %s %v %v", p.State, p.Closed, p.HasMerged)
	}
	if err := e.SetPullState(d.Owner, d.PublicRepo, d.EmptyPull, "open", false); err != nil {
		t.Fatal(err)
	}
	if p := decode[apiPull](t, get(t, e, path, "")); p.State != "open" || p.Closed != nil {
		t.Errorf("reopened: %s %v", p.State, p.Closed)
	}
}
