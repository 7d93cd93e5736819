package forgejoemu

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// The PR diff route: GET /repos/{owner}/{repo}/pulls/{index}.diff.
//
// With ?evidence=v1 it answers the forgejo.pr-diff-evidence.v1 entity of
// docs/architecture.md#evidence-entity, generated from real git exactly as
// Forgejo's GetDiffBinary runs it: git diff -p --binary --histogram <stored
// merge base> <OID of refs/pull/<index>/head>. The diff is produced twice,
// once for its length and SHA-256 (so that the answer carries a true
// Content-Length before the body starts) and once to stream it; both runs
// read immutable OIDs, so they agree. Nothing is buffered: memory does not
// grow with the diff.
//
// Without evidence=v1 it answers the plain diff (text/plain), as Forgejo's
// DownloadPullDiff does: with binary=true the same git command, otherwise
// git diff -p.
//
// Permissions are the route group's: a token needs read:repository
// (requireScope), a private repository is 404 to anyone who cannot see it
// (repoAssignment), and a revoked or unknown token is 401 (authenticate).

// EvidenceFault makes the evidence answers of one pull request misbehave.
// Transport-level faults (redirect, gzip, chunked, reset, slow body) are
// the generic SetFault kinds on the route's path; this switch covers what
// needs the entity or its true length.
type EvidenceFault struct {
	// Options are passed to the entity writer: the entity faults (late
	// corruption, pad bits, bad padding, duplicate members, truncation,
	// trailing bytes, wrong hash or count, …) and layouts (DataFirst).
	// Content-Length follows them (evidencetest.Len), so a truncated
	// entity is announced with its truncated length.
	Options []et.Option
	// Mutate, if set, changes the entity's metadata before it is written:
	// wrong IDs, index, ref, object format or OIDs.
	Mutate func(*et.Entity)
	// ContentLength, if set, gives the Content-Length values to send for an
	// entity of n bytes instead of the one true value: none (the body then
	// ends when the connection closes), several, a non-canonical spelling,
	// or a wrong number. Values are sent verbatim.
	ContentLength func(n int64) []string
	// Header is applied after the route's own headers: each key is set to
	// its values, and a key with no values is deleted (e.g. Cache-Control,
	// Accept-Ranges, Content-Type, Content-Range).
	Header http.Header
	// Times limits the fault to that many answers; 0 means until cleared.
	Times int
}

// diffState holds the evidence faults and synthetic diffs, by pull request.
// It has its own lock so that the route never holds Emulator.mu while it
// streams.
type diffState struct {
	mu        sync.Mutex
	faults    map[*Pull]*EvidenceFault
	synthetic map[*Pull]func() io.Reader
}

// SetEvidenceFault switches a fault on for the evidence answers of one pull
// request, replacing any earlier one. A zero EvidenceFault clears it.
func (e *Emulator) SetEvidenceFault(owner, repo string, index int64, f EvidenceFault) error {
	p, err := e.lookupPull(owner, repo, index)
	if err != nil {
		return err
	}
	d := &e.st.diff
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.Options == nil && f.Mutate == nil && f.ContentLength == nil && f.Header == nil {
		delete(d.faults, p)
		return nil
	}
	if d.faults == nil {
		d.faults = map[*Pull]*EvidenceFault{}
	}
	f.Header = f.Header.Clone()
	d.faults[p] = &f
	return nil
}

// ClearEvidenceFaults switches every evidence fault off.
func (e *Emulator) ClearEvidenceFaults() {
	d := &e.st.diff
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = nil
}

// SetSyntheticDiff makes the diff of one pull request the bytes that
// source returns (it is called once per pass, twice per answer, and must
// give the same bytes each time) instead of git's output; the entity keeps
// the pull request's real identity. It serves diffs far larger than is
// cheap to commit, for memory tests. A nil source restores git.
func (e *Emulator) SetSyntheticDiff(owner, repo string, index int64, source func() io.Reader) error {
	p, err := e.lookupPull(owner, repo, index)
	if err != nil {
		return err
	}
	d := &e.st.diff
	d.mu.Lock()
	defer d.mu.Unlock()
	if source == nil {
		delete(d.synthetic, p)
		return nil
	}
	if d.synthetic == nil {
		d.synthetic = map[*Pull]func() io.Reader{}
	}
	d.synthetic[p] = source
	return nil
}

// takeEvidenceFault returns the pull request's fault (consuming one use)
// and its synthetic source, if any.
func (e *Emulator) takeEvidenceFault(p *Pull) (*EvidenceFault, func() io.Reader) {
	d := &e.st.diff
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.faults[p]
	if f != nil && f.Times > 0 {
		c := *f
		if f.Times--; f.Times == 0 {
			delete(d.faults, p)
		}
		f = &c
	}
	return f, d.synthetic[p]
}

// handlePullDiff is GET /repos/{owner}/{repo}/pulls/{index}.diff.
func (e *Emulator) handlePullDiff(w http.ResponseWriter, r *http.Request) {
	rc := repoFrom(r.Context())
	index, _ := strconv.ParseInt(pathParam(r, "index"), 10, 64)
	e.mu.Lock()
	p := rc.repo.pulls[index]
	e.mu.Unlock()
	if p == nil {
		e.writeNotFound(w, "")
		return
	}
	q := r.URL.Query()
	if q.Get("evidence") != "v1" || e.isStock() {
		e.servePlainDiff(w, r, p, q.Get("binary") == "true")
		return
	}
	fault, synthetic := e.takeEvidenceFault(p)
	ent, source, err := e.evidenceInputs(r.Context(), p, synthetic)
	if err != nil {
		e.logf("forgejoemu: pull diff evidence: %v", err)
		e.writeError(w, http.StatusInternalServerError, "")
		return
	}
	if ent.ByteCount, ent.SHA256, err = digestOf(r.Context(), source); err != nil {
		e.logf("forgejoemu: pull diff evidence: %v", err)
		e.writeError(w, http.StatusInternalServerError, "")
		return
	}
	e.mu.Lock()
	ent.GeneratedAt = e.nowLocked()
	e.mu.Unlock()

	var opts []et.Option
	if fault != nil {
		opts = fault.Options
		if fault.Mutate != nil {
			fault.Mutate(&ent)
		}
	}
	n, err := et.Len(ent, opts...)
	if err != nil {
		e.logf("forgejoemu: pull diff evidence fault does not apply: %v", err)
		e.writeError(w, http.StatusInternalServerError, "")
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Cache-Control", "private, no-store")
	h.Set("Accept-Ranges", "none")
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if fault != nil {
		if fault.ContentLength != nil {
			if v := fault.ContentLength(n); len(v) > 0 {
				h["Content-Length"] = v
			} else {
				// No length: with identity transfer coding the body ends
				// when the connection closes, and Go sends no chunking.
				h.Del("Content-Length")
				h.Set("Transfer-Encoding", "identity")
			}
		}
		for k, v := range fault.Header {
			if len(v) == 0 {
				h.Del(k)
			} else {
				h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
			}
		}
	}
	w.WriteHeader(http.StatusOK)

	// net/http refuses a whole write that would pass the announced length;
	// a length under the entity's must still deliver that many bytes.
	var out io.Writer = w
	if m, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil && m < n {
		out = &cutWriter{w: w, left: m}
	}
	diff, wait := source.open(r.Context())
	_, werr := et.Write(out, ent, diff, opts...)
	diff.CloseWithError(werr)
	if gerr := wait(); werr == nil && gerr != nil {
		werr = gerr
	}
	if werr != nil {
		// The answer is cut short of its Content-Length; make sure the
		// client sees a broken response, not a short one.
		e.logf("forgejoemu: pull diff evidence stream: %v", werr)
		panic(http.ErrAbortHandler)
	}
}

// cutWriter passes on the first left bytes and drops the rest, as a
// server that announced too short a length would: the client reads the
// announced bytes, a cut entity.
type cutWriter struct {
	w    io.Writer
	left int64
}

func (c *cutWriter) Write(p []byte) (int, error) {
	k := min(int64(len(p)), c.left)
	if k > 0 {
		if _, err := c.w.Write(p[:k]); err != nil {
			return 0, err
		}
		c.left -= k
	}
	return len(p), nil
}

// evidenceInputs reads the generation inputs (the stored merge base and the
// OID refs/pull/<index>/head points at) and the observations, and returns
// the entity's metadata without byte count and hash, and the diff source.
func (e *Emulator) evidenceInputs(ctx context.Context, p *Pull, synthetic func() io.Reader) (et.Entity, diffSource, error) {
	r := p.repo
	head, err := r.resolve(ctx, p.HeadRef())
	if err != nil {
		return et.Entity{}, diffSource{}, err
	}
	if head == "" {
		return et.Entity{}, diffSource{}, fmt.Errorf("%s of %s is missing", p.HeadRef(), r.FullName())
	}
	tip, err := r.resolve(ctx, "refs/heads/"+p.base)
	if err != nil {
		return et.Entity{}, diffSource{}, err
	}
	e.mu.Lock()
	captured := e.nowLocked()
	ent := et.Entity{
		RepositoryID:     r.id,
		Owner:            r.owner.Login,
		Name:             r.name,
		PullRequestID:    p.id,
		Index:            p.index,
		ObjectFormat:     r.objectFormat,
		BaseRepositoryID: r.id,
		BaseOID:          p.mergeBase,
		HeadRepositoryID: r.id,
		HeadOID:          head,
		HeadRef:          p.HeadRef(),
		CapturedAt:       captured,
		TargetBranch:     []byte(p.base),
		TargetOID:        tip, // "" → null, status missing
		TargetObservedAt: captured,
		// The emulator has no forks: the head branch lives in the base
		// repository, which is then also the "original fork".
		ForkRepositoryID: r.id,
		ForkBranch:       []byte(p.head),
	}
	e.mu.Unlock()
	src := diffSource{synthetic: synthetic, run: func(ctx context.Context, w io.Writer) error {
		return r.DiffBinary(ctx, w, ent.BaseOID, ent.HeadOID)
	}}
	return ent, src, nil
}

// diffSource produces the diff bytes, from git or a synthetic generator.
type diffSource struct {
	synthetic func() io.Reader
	run       func(ctx context.Context, w io.Writer) error
}

// open starts one pass over the diff; wait returns git's error once the
// reader was closed or drained.
func (s diffSource) open(ctx context.Context) (*io.PipeReader, func() error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		var err error
		if s.synthetic != nil {
			_, err = io.Copy(pw, s.synthetic())
		} else {
			err = s.run(ctx, pw)
		}
		pw.CloseWithError(err)
		done <- err
	}()
	return pr, func() error { return <-done }
}

// digestOf makes the first pass: the diff's length and SHA-256.
func digestOf(ctx context.Context, s diffSource) (int64, string, error) {
	r, wait := s.open(ctx)
	n, sum, err := et.Digest(r)
	r.CloseWithError(err)
	if gerr := wait(); err == nil {
		err = gerr
	}
	return n, sum, err
}

// servePlainDiff answers the diff itself, without evidence.
func (e *Emulator) servePlainDiff(w http.ResponseWriter, r *http.Request, p *Pull, binary bool) {
	head, err := p.repo.resolve(r.Context(), p.HeadRef())
	if err != nil || head == "" {
		e.writeError(w, http.StatusInternalServerError, "")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	args := []string{"diff", "-p", "--histogram", p.MergeBase(), head}
	if binary {
		args = []string{"diff", "-p", "--binary", "--histogram", p.MergeBase(), head}
	}
	if _, err := e.run(r.Context(), gitCmd{dir: p.repo.gitDir, args: args, stdout: w}); err != nil {
		e.logf("forgejoemu: plain diff: %v", err)
		panic(http.ErrAbortHandler)
	}
}
