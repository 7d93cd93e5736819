package forgejo

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// DiffEvidenceRequest names the pull request whose diff evidence is read
// and the window wanted from it.
type DiffEvidenceRequest struct {
	Owner, Repo string
	Index       int64
	// Offset is the first byte of the window in the decoded diff.
	Offset int64
	// Window is the most bytes to keep, 1..evidence.MaxWindow.
	Window int
}

// PullDiffEvidence makes the one evidence GET of get_pull_request_diff
// (docs/architecture.md#evidence-request-and-framing):
//
//	GET /api/v1/repos/{owner}/{repo}/pulls/{index}.diff?binary=true&evidence=v1
//	Accept: application/json
//
// with the caller's credential, checks the native framing before reading a
// byte of the body, and streams the body through a reader held to the
// announced Content-Length into the evidence verifier. It returns a window
// only when the whole entity verified and names the requested repository;
// on any failure it returns a *toolerr.Error and nothing else.
//
// There is no retry and no fallback: a refusal or fault is the answer.
func (c *Client) PullDiffEvidence(ctx context.Context, cred upstream.Credential, r DiffEvidenceRequest) (v *evidence.Verified, err error) {
	if c.evidence != nil {
		defer func() {
			var n int64
			if v != nil {
				n = v.Identity.ByteCount
			}
			c.evidence(n, err)
		}()
	}
	query := url.Values{"binary": {"true"}, "evidence": {"v1"}}
	req, err := c.up.NewRequest(upstream.WithCredential(ctx, cred), routePullDiff.Method, query, nil,
		routePullDiff.Segments(r.Owner, r.Repo, strconv.FormatInt(r.Index, 10))...)
	if err != nil {
		return nil, evidenceTransportError(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.up.Do(req)
	if err != nil {
		return nil, evidenceTransportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, evidenceStatusError(resp.StatusCode)
	}
	// A stock forge ignores evidence=v1 and answers the plain diff as
	// text/plain: no framing fault, but a missing extension.
	if notJSON(resp.Header) {
		return nil, forgeUnsupported(ExtensionDiffEvidence, resp.StatusCode)
	}
	if err := CheckEvidenceFraming(resp); err != nil {
		return nil, err
	}
	body := &exactBody{r: resp.Body, left: resp.ContentLength}
	v, err = evidence.Verify(body, evidence.Request{Index: r.Index, Offset: r.Offset, Window: r.Window})
	if err != nil {
		return nil, err
	}
	// Forgejo resolves owner and repository names without regard to case
	// and answers with their stored spelling; any other name is not the
	// repository that was asked for.
	if !strings.EqualFold(v.Identity.Owner, r.Owner) || !strings.EqualFold(v.Identity.Name, r.Repo) {
		return nil, toolerr.New(toolerr.EvidenceMalformed, "the evidence names a repository other than the one requested")
	}
	return v, nil
}

// evidenceStatusError maps a native non-200 status of the evidence route.
// Unlike the other Forgejo reads, every status but 401, 403 and 404 is
// evidence_unavailable (409, 422, 503, …): there is no other evidence to
// offer. The body is never read.
func evidenceStatusError(status int) *toolerr.Error {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return StatusError(status)
	}
	return toolerr.New(toolerr.EvidenceUnavailable, "Forgejo did not provide the diff evidence").With("native_status", status)
}

// evidenceTransportError maps a transport failure of the evidence GET. It
// differs from TransportError in one way: framing the strict transport or
// net/http itself refused (a Content-Encoding, more than one Content-Length
// line, an unparsable Content-Length, an unsupported Transfer-Encoding:
// KindFraming) is evidence_framing.
func evidenceTransportError(err error) *toolerr.Error {
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.Kind == upstream.KindFraming {
		return toolerr.Wrap(err, toolerr.EvidenceFraming, "the evidence response framing was refused: %s", ue.Reason)
	}
	return TransportError(err)
}

// exactBody holds the body to its Content-Length: it hands the verifier at
// most that many bytes, reports a body that ends early as evidence_framing,
// and refuses a body that goes on after it. Transport errors become their
// Forgejo tool codes here, so the verifier passes them on unchanged.
type exactBody struct {
	r    io.Reader
	left int64
}

func (b *exactBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		var one [1]byte
		n, err := b.r.Read(one[:])
		switch {
		case n > 0:
			return 0, toolerr.New(toolerr.EvidenceFraming, "the evidence body is longer than its Content-Length")
		case err == nil:
			return 0, nil
		case err == io.EOF:
			return 0, io.EOF
		default:
			return 0, b.fail(err)
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	switch {
	case err == nil:
		return n, nil
	case (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) && b.left > 0:
		// No cause kept: the verifier reads a wrapped io.EOF as truncation.
		return n, toolerr.New(toolerr.EvidenceFraming, "the evidence body ended before its Content-Length")
	case err == io.EOF:
		return n, nil // the next Read makes sure nothing follows
	default:
		return n, b.fail(err)
	}
}

func (b *exactBody) fail(err error) error {
	return evidenceTransportError(err)
}
