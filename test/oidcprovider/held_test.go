package oidcprovider

import (
	"context"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// TestHeldIsBounded: unfinished authorization requests and issued access
// tokens are bounded by maxHeld; the oldest requests go first (with their
// codes), the newest stays.
func TestHeldIsBounded(t *testing.T) {
	s, err := newStorage(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var first, last string
	for i := range maxHeld + 50 {
		a, err := s.CreateAuthRequest(ctx, &oidc.AuthRequest{ClientID: "c"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = a.GetID()
			if err := s.SaveAuthCode(ctx, first, "code-of-first"); err != nil {
				t.Fatal(err)
			}
		}
		last = a.GetID()
	}
	if len(s.requests) != maxHeld || len(s.requestOrder) > 2*maxHeld {
		t.Fatalf("%d requests held, %d IDs in order", len(s.requests), len(s.requestOrder))
	}
	if _, err := s.AuthRequestByID(ctx, first); err == nil {
		t.Fatal("the oldest request is still held")
	}
	if _, ok := s.codes["code-of-first"]; ok {
		t.Fatal("the oldest request's code is still held")
	}
	if _, err := s.AuthRequestByID(ctx, last); err != nil {
		t.Fatal("the newest request is gone")
	}
	s.tokens["expired"] = &accessToken{expires: time.Now().Add(-time.Minute)}
	for range maxHeld + 10 {
		a, _ := s.CreateAuthRequest(ctx, &oidc.AuthRequest{ClientID: "c"}, "")
		if _, _, err := s.CreateAccessToken(ctx, a.(*authRequest)); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.tokens) > maxHeld {
		t.Fatalf("%d tokens held", len(s.tokens))
	}
	if _, ok := s.tokens["expired"]; ok {
		t.Fatal("an expired token is still held")
	}
}
