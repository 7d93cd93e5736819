package toolerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestCodeTable(t *testing.T) {
	cases := []struct {
		code   Code
		status int
		rpc    int
	}{
		{InvalidArguments, 400, -32602},
		{InvalidRequest, 400, -32600},
		{ParseError, 400, -32700},
		{Unauthenticated, 401, -32001},
		{InsufficientScope, 403, -32003},
		{OriginForbidden, 403, -32003},
		{BodyTooLarge, 413, -32013},
		{RateLimited, 429, -32029},
		{Overloaded, 503, -32053},
		{Internal, 500, -32603},
		{NotFound, 500, -32603}, // tool failures are results; this is only the fallback
	}
	for _, tc := range cases {
		t.Run(string(tc.code), func(t *testing.T) {
			if tc.code.HTTPStatus() != tc.status || tc.code.RPCCode() != tc.rpc {
				t.Fatalf("HTTP %d RPC %d, want %d %d", tc.code.HTTPStatus(), tc.code.RPCCode(), tc.status, tc.rpc)
			}
		})
	}
}

func TestError(t *testing.T) {
	base := New(NotFound, "no %s", "repo")
	withA := base.With("native_status", 404)
	withB := withA.With("extra", "x")
	if base.Details != nil || len(withA.Details) != 1 || len(withB.Details) != 2 {
		t.Fatalf("With mutated its receiver: %v %v %v", base.Details, withA.Details, withB.Details)
	}
	b, _ := json.Marshal(withB.Body())
	if string(b) != `{"error":{"code":"not_found","extra":"x","message":"no repo","native_status":404}}` {
		t.Fatalf("body %s", b)
	}
	// Details cannot overwrite code or message.
	odd := New(NotFound, "m").With("code", "forged").With("message", "forged")
	if e := odd.Body()["error"].(map[string]any); e["code"] != NotFound || e["message"] != "m" {
		t.Fatalf("details overwrote the code or message: %v", e)
	}

	cause := fmt.Errorf("dial: %w", io.EOF)
	w := Wrap(cause, UpstreamUnavailable, "unreachable")
	if !errors.Is(w, io.EOF) || w.Error() != "upstream_unavailable: unreachable" {
		t.Fatalf("%v", w)
	}
	if As(fmt.Errorf("ctx: %w", w)) != w {
		t.Fatal("As does not find a wrapped *Error")
	}
	plain := As(errors.New("SECRET detail"))
	if plain.Code != Internal || plain.Message != "internal error" || !errors.Is(plain, plain.Err) {
		t.Fatalf("%+v", plain)
	}
}
