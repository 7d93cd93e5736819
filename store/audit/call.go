package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"hash"
	"io"
	"sync"
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
	// Result gives the result text answered; nil for a refusal. Record
	// calls it only for a result no evidence identifies, so a caller that
	// has not built the text (the owned tools/call path writes a document
	// fragment's text straight into its answer) builds it only then.
	Result func() string
	// Stdio is set for a call over `agent-gateway stdio`: no HTTP request
	// id or address, so the record names the transport and the
	// JSON-RPC id instead.
	Stdio bool
}

// Recorder builds each authenticated call's record and queues it.
type Recorder struct {
	mode        Mode
	w           *Writer
	fingerprint []byte
	now         func() time.Time
	// dropped counts a record the queue refused.
	dropped func(reason string, n int)
	// Anonymous records the calls of callers without a principal too
	// (audit.anonymous); set it at wiring, before serving.
	Anonymous bool
	// Calls, when set, counts each recorded call by principal kind and
	// outcome class (the dashboard's calls by principal and outcome).
	Calls func(kind, outcome string)
	// macs pools the fingerprint's HMAC states (fingerprintOf).
	macs sync.Pool
}

// NewRecorder returns the recorder of mode over w; fingerprintKey keys
// the fingerprints of Forgejo bearers.
func NewRecorder(mode Mode, w *Writer, fingerprintKey []byte) *Recorder {
	return &Recorder{mode: mode, w: w, fingerprint: fingerprintKey, now: time.Now, dropped: w.cfg.Counters.Dropped}
}

// maxStdioIDBytes bounds the JSON-RPC id a stdio record keeps as its
// request id: the id is the client's text.
const maxStdioIDBytes = 128

// Record queues the record of c if its caller is authenticated, or, with
// Anonymous set, of any caller. In Required mode a record the queue
// refuses is an audit_unavailable error, and the caller answers that
// instead of the result.
func (r *Recorder) Record(ctx context.Context, c Call) error {
	p := middleware.PrincipalFromContext(ctx)
	if p == nil && !r.Anonymous {
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
	if c.Stdio {
		out.Transport = "stdio"
		if id := rec.Call().ID; len(id) <= maxStdioIDBytes {
			out.RequestID = string(id)
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		out.TraceID = sc.TraceID().String()
	}
	if c.Result != nil {
		if s, ok := ctx.Value(evidenceKey{}).(*evidenceSlot); ok {
			out.Evidence.Diff, out.Evidence.Document, out.Evidence.Grant = s.diff, s.document, s.grant
		}
		// A diff page or document fragment is identified by its evidence
		// (the bytes' own SHA-256, range and source); hashing its whole
		// result text again, ~48 KB for a diff page, was most of what the
		// record cost the call. Every other result is identified by it.
		if out.Evidence.Diff == nil && out.Evidence.Document == nil {
			out.Evidence.ResultSHA256 = sha256String(c.Result())
		}
	}
	if r.w.Enqueue(out) {
		r.count(out.Principal.Kind, c.Outcome)
		return nil
	}
	if r.dropped != nil {
		r.dropped("queue_full", 1)
	}
	if r.mode == Required {
		// The caller is answered this instead of the outcome it had.
		r.count(out.Principal.Kind, string(toolerr.AuditUnavailable))
		return toolerr.New(toolerr.AuditUnavailable, "the call's audit record could not be queued; nothing was answered, retry later")
	}
	r.count(out.Principal.Kind, c.Outcome)
	return nil
}

// count counts one call by principal kind and the outcome answered.
func (r *Recorder) count(kind, outcome string) {
	if r.Calls != nil {
		r.Calls(kind, outcomeClass(outcome))
	}
}

// principal describes p without its credential; nil is an anonymous
// caller, known only by its address key.
func (r *Recorder) principal(p *middleware.Principal) Principal {
	if p == nil {
		return Principal{Kind: KindAnonymous}
	}
	out := Principal{Subject: p.Subject, ClientID: p.ClientID, ProjectID: p.ProjectID, ConsentID: p.ConsentID}
	switch p.Kind {
	case middleware.OAuthConsent:
		out.Kind = KindOAuth
	case middleware.LegacyProjectToken:
		out.Kind = KindLegacyToken
	case middleware.ProcessCredential:
		out.Kind = KindProcess
		out.Fingerprint = r.fingerprintOf(p.ForgejoCredential())
	case middleware.ForgejoPassthrough:
		out.Kind = KindForgejoBearer
		out.Fingerprint = r.fingerprintOf(p.ForgejoCredential())
	default:
		out.Kind = "unknown"
	}
	return out
}

// fingerprintOf is the keyed fingerprint of a Forgejo credential:
// HMAC-SHA256 under the data directory's secret of the token, or of
// "basic", the user name and the password separated by NUL bytes. Without
// the secret it cannot be tested against a guessed token, unlike a plain
// hash; with it, an operator can tell whose a fingerprint is. The HMAC
// states are pooled: a reset one starts from its keyed state, where a new
// one hashes the key again and allocates two digests.
func (r *Recorder) fingerprintOf(c middleware.Credential) string {
	mac, _ := r.macs.Get().(hash.Hash)
	if mac == nil {
		mac = hmac.New(sha256.New, r.fingerprint)
	}
	defer r.macs.Put(mac)
	mac.Reset()
	if c.Token != "" || c.Username == "" {
		io.WriteString(mac, c.Token)
	} else {
		io.WriteString(mac, "basic\x00"+c.Username+"\x00"+c.Password)
	}
	var sum [sha256.Size]byte
	mac.Sum(sum[:0])
	return hexString(&sum)
}

// outcomeClass bounds an outcome for a metric label: ok, or the error
// code, which is one of the stable codes (upstream/toolerr), a bounded
// set.
func outcomeClass(outcome string) string {
	if outcome == "" {
		return "unknown"
	}
	return outcome
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
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return hexString(&sum)
}
