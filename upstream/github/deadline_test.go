package github

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// waitTrickles waits (bounded) until the emulator sends no trickling answer:
// the gateway side closed every such connection.
func waitTrickles(t *testing.T, emu *githubemu.Emulator) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); emu.Trickling() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d trickling answers still held 5 s after the call ended", emu.Trickling())
		}
	}
}

// TestCallDeadline: a Contents answer that trickles one byte at a time
// makes progress on every read, so the I/O timeout never cuts it; the
// call's total deadline does, names itself, and closes the connection.
// A caller that leaves ends the read at once too.
func TestCallDeadline(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	// Mint outside the faulted read, so only the Contents answer trickles.
	if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
		t.Fatal(err)
	}
	trickle := githubemu.Fault{Kind: githubemu.FaultTrickle, Interval: 50 * time.Millisecond}

	t.Run("the total deadline", func(t *testing.T) {
		s.emu.SetFault(githubemu.RouteContents, trickle)
		defer s.emu.ClearFaults()
		s.client.SetCallTimeout(400 * time.Millisecond)
		defer s.client.SetCallTimeout(0)
		st := time.Now()
		_, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme))
		if took := time.Since(st); took > 3*time.Second {
			t.Fatalf("the read took %s under a 400 ms deadline", took)
		}
		var te *toolerr.Error
		if !errors.As(err, &te) || te.Code != toolerr.ProviderUnavailable || !strings.Contains(te.Message, "did not arrive whole within the 400ms") {
			t.Fatalf("err = %v, want provider_unavailable naming the deadline", err)
		}
		waitTrickles(t, s.emu)
	})
	t.Run("the caller leaves", func(t *testing.T) {
		s.emu.SetFault(githubemu.RouteContents, trickle)
		defer s.emu.ClearFaults()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		st := time.Now()
		_, err := s.client.GetFile(ctx, s.req(s.docs.Readme))
		if took := time.Since(st); err == nil || took > 3*time.Second {
			t.Fatalf("err %v after %s: the read outlived its caller", err, took)
		}
		if strings.Contains(err.Error(), "did not arrive whole") {
			t.Fatalf("a caller leaving was reported as the call deadline: %v", err)
		}
		waitTrickles(t, s.emu)
	})
	t.Run("an honest read within the deadline", func(t *testing.T) {
		s.client.SetCallTimeout(5 * time.Second)
		defer s.client.SetCallTimeout(0)
		if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
			t.Fatal(err)
		}
	})
}
