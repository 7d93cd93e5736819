package upstream

import (
	"errors"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

func TestTransportCodes(t *testing.T) {
	table := TransportCodes{Name: "Forge", Unavailable: "u", Timeout: "t", Framing: "f", TooLarge: "l"}
	already := toolerr.New(toolerr.Conflict, "kept")
	for _, tc := range []struct {
		name   string
		err    error
		code   toolerr.Code
		msg    string
		status any
	}{
		{"not an upstream error", errors.New("boom"), "u", "Forge could not be reached", nil},
		{"already a code", already, toolerr.Conflict, "kept", nil},
		{"unavailable", &Error{Kind: KindUnavailable}, "u", "Forge could not be reached", nil},
		{"timeout", &Error{Kind: KindTimeout}, "t", "Forge made no progress", nil},
		{"redirect keeps the status", &Error{Kind: KindRedirect, Status: 302}, toolerr.RedirectRefused, "never followed", 302},
		{"framing names the reason", &Error{Kind: KindFraming, Reason: "content encoding refused"}, "f", "Forge's response framing was refused: content encoding refused", nil},
		{"too large", &Error{Kind: KindTooLarge}, "l", "exceeded its size bound", nil},
		{"request", &Error{Kind: KindRequest, Reason: "bad segment"}, toolerr.InvalidArguments, "could not be formed: bad segment", nil},
		{"unknown kind", &Error{Kind: Kind(99)}, "u", "Forge could not be reached", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := table.Error(tc.err)
			if e.Code != tc.code || !strings.Contains(e.Message, tc.msg) || e.Details["native_status"] != tc.status {
				t.Fatalf("Error(%v) = %s %q %v", tc.err, e.Code, e.Message, e.Details)
			}
			if tc.err != error(already) && !errors.Is(e, tc.err) {
				t.Fatalf("the cause is not kept: %v", e)
			}
		})
	}
}
