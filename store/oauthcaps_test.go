package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// steppingClock returns a clock that moves a second forward at each
// reading, so that rows made one after another are ordered by time.
func steppingClock() func() time.Time {
	var mu sync.Mutex
	t := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// TestOAuthCaps: past the cap the oldest unused clients (their consents
// revoked) and the oldest login sessions go, in the same transaction as
// the new row; used clients are neither counted nor evicted; a cap of
// zero is no cap. On both SQLite and PostgreSQL.
func TestOAuthCaps(t *testing.T) {
	t.Run("unused clients", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, s store.Store) {
			ctx := context.Background()
			store.SetClock(s, steppingClock())
			uris := []string{"http://127.0.0.1/cb"}
			used := try(s.RegisterClient(ctx, "used", uris)).must(t)
			f := newFixture(t, s)
			redeem(t, s, f.consent(t, s, used.ClientID, "documents:read"), used.ClientID)
			var unused []store.Client
			for range 3 {
				c, n, err := s.RegisterClientCapped(ctx, "unused", uris, 3)
				if err != nil || n != 0 {
					t.Fatalf("under the cap: evicted %d, %v", n, err)
				}
				unused = append(unused, c)
			}
			pending := f.consent(t, s, unused[0].ClientID, "documents:read") // consented, never redeemed
			c, n, err := s.RegisterClientCapped(ctx, "newest", uris, 3)
			if err != nil || n != 1 {
				t.Fatalf("past the cap: evicted %d, %v", n, err)
			}
			left := try(s.ListClients(ctx, true)).must(t)
			if len(left) != 3 || left[0].ClientID != unused[1].ClientID || left[2].ClientID != c.ClientID {
				t.Fatalf("unused clients left: %+v", left)
			}
			_, err = s.GetClient(ctx, unused[0].ClientID)
			wantErr(t, err, store.ErrNotFound)
			if _, err := s.GetClient(ctx, used.ClientID); err != nil {
				t.Fatalf("the used client went: %v", err)
			}
			if g := try(s.GetConsent(ctx, pending.ID)).must(t); g.RevokedAt == nil {
				t.Fatal("the evicted client's consent is not revoked")
			}
			// A cap of 1 takes all the older unused at once; 0 is none.
			if _, n, err := s.RegisterClientCapped(ctx, "one", uris, 1); err != nil || n != 3 {
				t.Fatalf("cap 1: evicted %d, %v", n, err)
			}
			for range 3 {
				if _, n, err := s.RegisterClientCapped(ctx, "free", uris, 0); err != nil || n != 0 {
					t.Fatalf("cap 0: evicted %d, %v", n, err)
				}
			}
			if got := try(s.CountOAuthRows(ctx)).must(t); got.UnusedClients != 4 || got.Clients != 5 {
				t.Fatalf("rows %+v", got)
			}
		})
	})
	t.Run("login sessions", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, s store.Store) {
			ctx := context.Background()
			store.SetClock(s, steppingClock())
			var hashes []string
			for i := range 4 {
				ls := store.LoginSession{SessionHash: store.HashToken(unique("ls")), AuthorizeQuery: "a=b",
					IdPState: "s", IdPNonce: "n", IdPVerifier: "v", ExpiresAt: time.Now().Add(time.Hour)}
				n, err := s.CreateLoginSessionCapped(ctx, ls, 2)
				if want := int64(min(max(i-1, 0), 1)); err != nil || n != want {
					t.Fatalf("session %d: evicted %d, want %d, %v", i, n, want, err)
				}
				hashes = append(hashes, ls.SessionHash)
			}
			for i, h := range hashes {
				_, err := s.GetLoginSession(ctx, h)
				if i < 2 {
					wantErr(t, err, store.ErrNotFound)
				} else if err != nil {
					t.Fatalf("session %d: %v", i, err)
				}
			}
			if got := try(s.CountOAuthRows(ctx)).must(t); got.LoginSessions != 2 {
				t.Fatalf("rows %+v", got)
			}
		})
	})
}
