package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// TestDocumentsCallersLeave: a GitHub answer trickling
// one byte every 3 s makes progress on every read, so no I/O timeout cuts
// it. Callers that give up (once each call waits on its trickling answer)
// must end their calls: the upstream
// connections are closed and requests in flight return to zero at once,
// and an honest call from the same address is not refused with
// in_flight_per_ip. A caller that waits gets the GitHub call deadline
// (github.call_timeout), named as such.
func TestDocumentsCallersLeave(t *testing.T) {
	const callers = 4
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{env: map[string]string{
		"AGENT_GATEWAY_HTTP_MAX_IN_FLIGHT_PER_IP": fmt.Sprint(callers),
		// Longer than the test allows for the connections to close after
		// the callers leave, so only the callers leaving can close them.
		"AGENT_GATEWAY_GITHUB_CALL_TIMEOUT": "8s",
	}})
	d := s.docs
	url := s.gw.URL + "/mcp/documents"
	args := map[string]any{"source_id": s.sources[d.Readme]}
	// An honest read first: the installation token is minted and cached,
	// so only the Contents answers trickle.
	if resp, out := rawCall(t, url, s.tokenA, "git_document_get", args); resp.StatusCode != 200 || strings.Contains(out, `"isError":true`) {
		t.Fatalf("honest read: HTTP %d %.300s", resp.StatusCode, out)
	}
	s.emu.SetFault(githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultTrickle, Interval: 3 * time.Second})

	t.Run("callers that give up", func(t *testing.T) {
		// The callers give up together once every call is waiting on its
		// trickling answer (at most 10 s after they started).
		ctx, giveUp := context.WithTimeout(context.Background(), 10*time.Second)
		defer giveUp()
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if status, _, err := documentCall(ctx, url, s.tokenA, args); err == nil {
					t.Errorf("HTTP %d before the trickle could end", status)
				}
			}()
		}
		for s.emu.Trickling() < callers && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		if n := s.emu.Trickling(); n != callers {
			t.Fatalf("%d answers trickling, want %d", n, callers)
		}
		giveUp()
		wg.Wait()
		left := time.Now()
		// The calls end with their callers: every upstream connection is
		// closed and nothing is in flight well before the call deadline.
		for {
			_, exposition := get(t, s.gw.URL+"/metrics")
			inFlight := metricValue(t, exposition, "agent_gateway_requests_in_flight", "")
			if s.emu.Trickling() == 0 && inFlight == 0 {
				break
			}
			if time.Since(left) > 2*time.Second {
				t.Fatalf("2 s after the callers left: %d upstream answers still trickling, %v requests in flight", s.emu.Trickling(), inFlight)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("the calls ended %s after their callers left", time.Since(left).Round(10*time.Millisecond))
	})
	t.Run("an honest call from the same address", func(t *testing.T) {
		s.emu.ClearFaults()
		resp, out := rawCall(t, url, s.tokenA, "git_document_get", args)
		if resp.StatusCode != 200 || strings.Contains(out, "in_flight") || strings.Contains(out, `"isError":true`) {
			t.Fatalf("HTTP %d %.300s", resp.StatusCode, out)
		}
	})
	t.Run("a caller that waits meets the call deadline", func(t *testing.T) {
		s.emu.SetFault(githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultTrickle, Interval: 3 * time.Second})
		defer s.emu.ClearFaults()
		st := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		status, out, err := documentCall(ctx, url, s.tokenA, args)
		took := time.Since(st)
		if err != nil {
			t.Fatalf("no answer within 30 s: %v", err)
		}
		if status != 200 || !strings.Contains(out, "provider_unavailable") || !strings.Contains(out, "github.call_timeout") {
			t.Fatalf("HTTP %d after %s: %.400s", status, took, out)
		}
		if took < 7*time.Second || took > 20*time.Second {
			t.Fatalf("the call ended after %s, want about the 8 s deadline", took)
		}
		for end := time.Now().Add(2 * time.Second); s.emu.Trickling() > 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the upstream connection outlived the call deadline")
			}
		}
	})
}

// documentCall posts one git_document_get call with a bearer and gives up
// when ctx ends.
func documentCall(ctx context.Context, url, token string, args map[string]any) (int, string, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return 0, "", err
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"git_document_get","arguments":` + string(a) + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), err
}
