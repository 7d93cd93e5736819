package middleware

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// BodyBudgetOptions configure NewBodyBudget.
type BodyBudgetOptions struct {
	// Max is the request-body bytes the whole gateway buffers at once;
	// MaxPerIP those of one client IP.
	Max, MaxPerIP int64
	// Refused, if set, is told each refusal: "body_budget" or
	// "body_budget_per_ip" (metrics).
	Refused func(bound string)
}

// BodyBudget is a global budget of request-body bytes held at once. The
// 1 MiB limit bounds one body; without this, hundreds of slow 1 MiB bodies
// made the gateway hold hundreds of megabytes in a hostile-load run. A
// declared Content-Length is reserved before any byte is read, and refused
// early when it does not fit; a body of unknown length reserves as it is
// read, and its reader fails with a *BodyBudgetError when the budget runs
// out. Reservations last until the handler returns, since the MCP peek keeps
// the body for the handler.
type BodyBudget struct {
	t   *tally
	opt BodyBudgetOptions
}

// NewBodyBudget returns the budget; it panics on a bound that is not
// positive (a construction-time misconfiguration).
func NewBodyBudget(o BodyBudgetOptions) *BodyBudget {
	return &BodyBudget{t: newTally(o.Max, o.MaxPerIP), opt: o}
}

// Buffered is the body bytes reserved now.
func (b *BodyBudget) Buffered() int64 { return b.t.held() }

// bodyStep is how much a body of unknown length reserves at a time.
const bodyStep = 32 << 10

// BodyBudgetError is what a budgeted body's reader returns when the
// budget cannot cover the next bytes.
type BodyBudgetError struct{ Bound Bound }

func (e *BodyBudgetError) Error() string {
	return fmt.Sprintf("request body budget exhausted (bound %d)", e.Bound)
}

// Handler reserves the body's bytes around next.
func (b *BodyBudget) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		ip := RequestClientKey(r)
		if r.ContentLength > 0 {
			if r.ContentLength > b.opt.MaxPerIP {
				// It could never fit: not a matter of waiting.
				closeAfter(w, r)
				Refuse(w, r, toolerr.New(toolerr.BodyTooLarge, "request body over %d bytes", b.opt.MaxPerIP))
				return
			}
			if bound := b.t.acquire(ip, r.ContentLength); bound != withinBounds {
				refuseBound(w, r, bound, "body_budget", b.opt.Refused, "request-body bytes buffered")
				return
			}
			defer b.t.release(ip, r.ContentLength)
			next.ServeHTTP(w, r)
			return
		}
		body := &budgetedBody{ReadCloser: r.Body, t: b.t, ip: ip, refused: b.opt.Refused}
		defer body.release()
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// budgetedBody reserves bytes of a body of unknown length before it reads
// them.
type budgetedBody struct {
	io.ReadCloser
	t              *tally
	ip             string
	reserved, used int64
	failed         error
	refused        func(string)
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	if b.failed != nil {
		return 0, b.failed
	}
	if len(p) == 0 {
		return b.ReadCloser.Read(p)
	}
	if b.reserved == b.used {
		step := int64(bodyStep)
		if bound := b.t.acquire(b.ip, step); bound != withinBounds {
			name := "body_budget"
			if bound == BoundPerIP {
				name += "_per_ip"
			}
			if b.refused != nil {
				b.refused(name)
			}
			b.failed = &BodyBudgetError{Bound: bound}
			return 0, b.failed
		}
		b.reserved += step
	}
	if room := b.reserved - b.used; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.ReadCloser.Read(p)
	b.used += int64(n)
	return n, err
}

func (b *budgetedBody) release() { b.t.release(b.ip, b.reserved) }

// bodyBudgetRefusal maps a body read error to the refusal to answer, or
// nil when the error is not the budget's.
func bodyBudgetRefusal(err error) *toolerr.Error {
	var be *BodyBudgetError
	if !errors.As(err, &be) {
		return nil
	}
	if be.Bound == BoundPerIP {
		return toolerr.New(toolerr.RateLimited, "this client address is at its bound of request-body bytes buffered; retry later").With("bound", "body_budget_per_ip")
	}
	return toolerr.New(toolerr.Overloaded, "the gateway is at its bound of request-body bytes buffered; retry later").With("bound", "body_budget")
}
