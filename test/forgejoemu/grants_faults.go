package forgejoemu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// GrantOp names one native grant route, for grant faults.
type GrantOp int

// The grant routes.
const (
	GrantOpList          GrantOp = iota + 1 // GET /agent-work-grants
	GrantOpGet                              // GET …/agent-work-grants/{grant}
	GrantOpConfirm                          // POST …/{grant}/confirm
	GrantOpSubmit                           // POST …/{grant}/issues
	GrantOpGetSubmission                    // GET …/{grant}/submissions/{key}
)

// GrantFaultKind selects how a grant route misbehaves after doing its work.
// Unlike the generic faults (SetFault), which act before or around a route,
// these act after the route has committed: the write happened, and only the
// answer is lost or wrong. That is the case a client can only reconcile by
// reading back.
type GrantFaultKind int

// The grant fault kinds.
const (
	GrantFaultNone GrantFaultKind = iota
	// GrantFaultDrop closes the connection without sending a response byte.
	GrantFaultDrop
	// GrantFaultStatus answers GrantFault.Status with the normal body.
	GrantFaultStatus
	// GrantFaultMalformed answers the normal status and headers with the
	// first half of the normal body, which is not JSON.
	GrantFaultMalformed
	// GrantFaultMutate answers the normal status with the body that
	// GrantFault.Mutate makes of the normal one (decoded with UseNumber into
	// map[string]any / []any): an inconsistent or incomplete success.
	GrantFaultMutate
	// GrantFaultStall waits GrantFault.Delay before answering normally.
	GrantFaultStall
)

// GrantFault is a misbehaviour of one grant route, applied after its work.
type GrantFault struct {
	Kind   GrantFaultKind
	Status int
	Mutate func(body any) any
	Delay  time.Duration
	// Times limits the fault to that many requests; 0 means until cleared.
	Times int
}

type grantFaultEntry struct {
	fault GrantFault
	left  int
}

// SetGrantFault switches a fault on for one grant route, replacing any
// earlier one; GrantFaultNone clears it.
func (e *Emulator) SetGrantFault(op GrantOp, f GrantFault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	gs := e.grantsLocked()
	if f.Kind == GrantFaultNone {
		delete(gs.faults, op)
		return
	}
	gs.faults[op] = &grantFaultEntry{fault: f, left: f.Times}
}

// ClearGrantFaults switches every grant fault off.
func (e *Emulator) ClearGrantFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.grantsLocked().faults = map[GrantOp]*grantFaultEntry{}
}

func (e *Emulator) takeGrantFault(op GrantOp) (GrantFault, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	gs := e.grantsLocked()
	entry := gs.faults[op]
	if entry == nil {
		return GrantFault{}, false
	}
	if entry.fault.Times > 0 {
		entry.left--
		if entry.left <= 0 {
			delete(gs.faults, op)
		}
	}
	return entry.fault, true
}

// SetGrantPageClamp makes the grant list answer at most n grants per page
// whatever limit the client asks for, as a Core with a smaller
// MAX_RESPONSE_ITEMS would; 0 restores Forgejo's clamp of 50. Link and
// X-Total-Count follow the clamped width, as Forgejo's do; SetLinkMode
// (LinkNone) makes it a Core that clamps and sends no Link.
func (e *Emulator) SetGrantPageClamp(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.grantsLocked().pageClamp = max(n, 0)
}

// GrantPostCounts counts the POSTs that reached the grant routes.
type GrantPostCounts struct {
	Confirm int
	Submit  int
}

var grantPostRe = regexp.MustCompile(`^/api/v1/repos/[^/]+/[^/]+/agent-work-grants/[^/]+/(confirm|issues)/?$`)

// GrantPosts counts the confirmation and submission POSTs received since
// Start or ResetRequests, from the request record: every POST that arrived
// counts, whether a fault, a refusal or the route answered it.
func (e *Emulator) GrantPosts() GrantPostCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n GrantPostCounts
	for _, r := range e.st.requests.All() {
		if r.Method != http.MethodPost {
			continue
		}
		switch m := grantPostRe.FindStringSubmatch(r.Path); {
		case m == nil:
		case m[1] == "confirm":
			n.Confirm++
		default:
			n.Submit++
		}
	}
	return n
}

// answerGrant sends a grant route's answer through the route's fault, if any.
func (e *Emulator) answerGrant(w http.ResponseWriter, r *http.Request, op GrantOp, status int, body any) {
	f, ok := e.takeGrantFault(op)
	if !ok {
		e.writeJSON(w, status, body)
		return
	}
	e.logf("forgejoemu: grant fault %d on %s %s", f.Kind, r.Method, r.URL.Path)
	switch f.Kind {
	case GrantFaultDrop:
		// net/http closes the connection without writing anything that
		// the handler has not flushed, and nothing was written.
		panic(http.ErrAbortHandler)
	case GrantFaultStatus:
		status = f.Status
	case GrantFaultMalformed:
		var buf bytes.Buffer
		_ = json.NewEncoder(&buf).Encode(body)
		half := buf.Bytes()[:buf.Len()/2]
		w.Header().Set("Content-Type", contentTypeJSON)
		w.Header().Set("Content-Length", strconv.Itoa(len(half)))
		w.WriteHeader(status)
		_, _ = w.Write(half)
		return
	case GrantFaultMutate:
		var v any
		b, _ := json.Marshal(body)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		_ = dec.Decode(&v)
		if f.Mutate != nil {
			v = f.Mutate(v)
		}
		body = v
	case GrantFaultStall:
		if !e.sleep(r.Context(), f.Delay) {
			return
		}
	}
	e.writeJSON(w, status, body)
}
