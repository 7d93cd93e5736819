package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// evidenceKey carries a call's evidence slot from the toolset, which
// records the call, to the tool handler, which knows what it answered.
type evidenceKey struct{}

type evidenceSlot struct {
	diff     *DiffEvidence
	document *DocumentEvidence
	grant    *GrantEvidence
}

// WithEvidence returns ctx carrying an empty evidence slot for one call.
func WithEvidence(ctx context.Context) context.Context {
	return context.WithValue(ctx, evidenceKey{}, &evidenceSlot{})
}

// SetDiff notes the diff page a call answered; without a slot (auditing
// off) it does nothing.
func SetDiff(ctx context.Context, d DiffEvidence) {
	if s, ok := ctx.Value(evidenceKey{}).(*evidenceSlot); ok {
		s.diff = &d
	}
}

// SetDocument notes the document fragment a call answered; without a
// slot it does nothing.
func SetDocument(ctx context.Context, d DocumentEvidence) {
	if s, ok := ctx.Value(evidenceKey{}).(*evidenceSlot); ok {
		s.document = &d
	}
}

// SetGrant notes the outcome of a grant write or submission readback;
// without a slot it does nothing.
func SetGrant(ctx context.Context, g GrantEvidence) {
	if s, ok := ctx.Value(evidenceKey{}).(*evidenceSlot); ok {
		s.grant = &g
	}
}

// Call is one answered tool call as the toolset saw it.
type Call struct {
	Toolset string
	Tool    string
	// Args are the call's raw arguments, read only for the target.
	Args json.RawMessage
	// Outcome is "ok" or the error code answered.
	Outcome string
	// Result is the result text answered, nil for a refusal.
	Result *string
}

// Recorder builds each authenticated call's record and queues it.
type Recorder struct {
	mode        Mode
	w           *Writer
	fingerprint []byte
	now         func() time.Time
	// dropped counts a record the queue refused.
	dropped func(reason string, n int)
}

// NewRecorder returns the recorder of mode over w; fingerprintKey keys
// the fingerprints of Forgejo bearers.
func NewRecorder(mode Mode, w *Writer, fingerprintKey []byte) *Recorder {
	return &Recorder{mode: mode, w: w, fingerprint: fingerprintKey, now: time.Now, dropped: w.cfg.Counters.Dropped}
}

// Record queues the record of c if its caller is authenticated; an
// anonymous call is not recorded. In Required mode a record the queue
// refuses is an audit_unavailable error, and the caller answers that
// instead of the result.
func (r *Recorder) Record(ctx context.Context, c Call) error {
	p := middleware.PrincipalFromContext(ctx)
	if p == nil {
		return nil
	}
	rec := middleware.RecordFromContext(ctx)
	out := Record{
		At:         r.now().UTC().Truncate(time.Microsecond),
		RequestID:  rec.RequestID(),
		Principal:  r.principal(p),
		AddressKey: rec.ClientKey(),
		Toolset:    c.Toolset,
		Tool:       c.Tool,
		Target:     targetOf(c.Args),
		Outcome:    c.Outcome,
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		out.TraceID = sc.TraceID().String()
	}
	if c.Result != nil {
		out.Evidence.ResultSHA256 = sha256String(*c.Result)
		if s, ok := ctx.Value(evidenceKey{}).(*evidenceSlot); ok {
			out.Evidence.Diff, out.Evidence.Document, out.Evidence.Grant = s.diff, s.document, s.grant
		}
	}
	if r.w.Enqueue(out) {
		return nil
	}
	if r.dropped != nil {
		r.dropped("queue_full", 1)
	}
	if r.mode == Required {
		return toolerr.New(toolerr.AuditUnavailable, "the call's audit record could not be queued; nothing was answered, retry later")
	}
	return nil
}

// principal describes p without its credential.
func (r *Recorder) principal(p *middleware.Principal) Principal {
	out := Principal{Subject: p.Subject, ProjectID: p.ProjectID, ConsentID: p.ConsentID}
	switch p.Kind {
	case middleware.OAuthConsent:
		out.Kind = "oauth"
	case middleware.LegacyProjectToken:
		out.Kind = "legacy_token"
	case middleware.ProcessCredential:
		out.Kind = "process"
	case middleware.ForgejoPassthrough:
		out.Kind = "forgejo_bearer"
		mac := hmac.New(sha256.New, r.fingerprint)
		cred := p.ForgejoCredential()
		mac.Write([]byte(cred.Token))
		out.Fingerprint = hex.EncodeToString(mac.Sum(nil))
	default:
		out.Kind = "unknown"
	}
	return out
}

// targetOf reads the target members of a call's arguments; arguments
// that do not decode name no target (the call was refused for them).
func targetOf(args json.RawMessage) Target {
	var t Target
	if len(args) > 0 {
		_ = json.Unmarshal(args, &t)
	}
	return t
}

// sha256String is SHA256Hex of s without converting it to a slice: a
// diff page's text is about 49 KB, and a copy of it on every call would
// be garbage the collector then pays for. The text passes through a
// stack buffer instead.
func sha256String(s string) string {
	h := sha256.New()
	var buf [4096]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}
