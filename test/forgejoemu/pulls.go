package forgejoemu

import (
	"context"
	"fmt"
	"time"
)

// PullOptions describes a pull request for CreatePull. Head and Base are
// branches of the same repository (the emulator has no forks).
type PullOptions struct {
	Head, Base string
	Title      string
	Body       string
	// Poster is the login of an existing user; empty means the repository owner.
	Poster string
}

// CreatePull opens a pull request the way Forgejo stores one: its index is
// the repository's next issue number, it has an ID of its own, its merge base
// is git merge-base of the two branch tips at creation, and the hidden ref
// refs/pull/<index>/head is written at the head tip. Empty diffs are allowed.
func (e *Emulator) CreatePull(owner, repo string, p PullOptions) (*Pull, error) {
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return nil, err
	}
	if p.Head == "" || p.Base == "" || p.Head == p.Base {
		return nil, fmt.Errorf("%w: head %q and base %q", ErrInvalid, p.Head, p.Base)
	}
	e.mu.Lock()
	poster := r.owner
	if p.Poster != "" {
		poster = e.userLocked(p.Poster)
	}
	e.mu.Unlock()
	if poster == nil {
		return nil, fmt.Errorf("%w: user %s", ErrNotFound, p.Poster)
	}

	ctx := context.Background()
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	head, base, err := r.tips(ctx, p.Head, p.Base)
	if err != nil {
		return nil, err
	}
	mb, err := r.mergeBase(ctx, base, head)
	if err != nil {
		return nil, err
	}

	e.mu.Lock()
	now := e.nowLocked()
	pr := &Pull{
		repo: r, id: e.st.nextPull, index: r.nextIndex, poster: poster,
		title: p.Title, body: p.Body, head: p.Head, base: p.Base,
		mergeBase: mb, created: now, updated: now,
	}
	e.st.nextPull++
	r.nextIndex++
	r.pulls[pr.index] = pr
	e.mu.Unlock()

	if err := r.updateRef(ctx, pr.HeadRef(), head, ""); err != nil {
		e.mu.Lock()
		delete(r.pulls, pr.index)
		e.mu.Unlock()
		return nil, err
	}
	return pr, nil
}

// UpdatePullHead is a push to the head branch as Forgejo handles it:
// refs/pull/<index>/head moves to the branch's current tip and the merge base
// is computed again (Forgejo's pull request test task does both).
func (e *Emulator) UpdatePullHead(owner, repo string, index int64) error {
	p, err := e.lookupPull(owner, repo, index)
	if err != nil {
		return err
	}
	r := p.repo
	ctx := context.Background()
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	refs, err := r.refs(ctx)
	if err != nil {
		return err
	}
	head, base := refs["refs/heads/"+p.head], refs["refs/heads/"+p.base]
	if head == "" || base == "" {
		return fmt.Errorf("%w: branch %q or %q of %s", ErrNotFound, p.head, p.base, r.FullName())
	}
	mb, err := r.mergeBase(ctx, base, head)
	if err != nil {
		return err
	}
	if err := r.updateRef(ctx, p.HeadRef(), head, refs[p.HeadRef()]); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p.mergeBase = mb
	p.updated = e.nowLocked()
	return nil
}

// SetPullMergeBase overwrites the stored merge base, for tests of clients
// that must use the stored value rather than recompute it.
func (e *Emulator) SetPullMergeBase(owner, repo string, index int64, oid string) error {
	p, err := e.lookupPull(owner, repo, index)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p.mergeBase = oid
	p.updated = e.nowLocked()
	return nil
}

// SetPullState closes or reopens a pull request. merged=true (only with
// "closed") marks it merged at the current head, merged by the repository
// owner, without touching the base branch. A merged pull request cannot be
// reopened, as in Forgejo.
func (e *Emulator) SetPullState(owner, repo string, index int64, state string, merged bool) error {
	p, err := e.lookupPull(owner, repo, index)
	if err != nil {
		return err
	}
	if state != "open" && state != "closed" {
		return fmt.Errorf("%w: state %q", ErrInvalid, state)
	}
	if state == "open" && merged {
		return fmt.Errorf("%w: an open pull request cannot be merged", ErrInvalid)
	}
	var headOID string
	if merged {
		if headOID, err = p.repo.resolve(context.Background(), p.HeadRef()); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.merged {
		return fmt.Errorf("%w: pull request %d is merged", ErrInvalid, index)
	}
	now := e.nowLocked()
	p.updated = now
	switch {
	case state == "open":
		p.closed, p.closedAt = false, time.Time{}
	case !p.closed:
		p.closed, p.closedAt = true, now
	}
	if merged {
		p.merged, p.mergedAt, p.mergedCommit, p.mergedBy = true, now, headOID, p.repo.owner
	}
	return nil
}

// Pull returns a pull request by index.
func (e *Emulator) Pull(owner, repo string, index int64) (*Pull, error) {
	return e.lookupPull(owner, repo, index)
}
