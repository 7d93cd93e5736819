package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// backend is a fresh store and a raw connection to the same database, to
// tamper with rows as an attacker with database access would.
type backend struct {
	name string
	open func(t *testing.T) (store.Store, *sql.DB)
}

var backends = []backend{
	{"sqlite", func(t *testing.T) (store.Store, *sql.DB) {
		u := storetest.SQLiteURL(t)
		return openBoth(t, u, "sqlite", strings.TrimPrefix(u, "sqlite://"))
	}},
	{"postgres", func(t *testing.T) (store.Store, *sql.DB) {
		u := storetest.PostgresURL(t)
		return openBoth(t, u, "pgx", u)
	}},
}

func openBoth(t *testing.T, url, driver, dsn string) (store.Store, *sql.DB) {
	t.Helper()
	st, err := store.Open(context.Background(), url, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return st, db
}

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writeChain writes n records through a Writer and closes it, which
// signs the last checkpoint; it returns the writer id.
func writeChain(t *testing.T, st store.Store, key ed25519.PrivateKey, n int) string {
	t.Helper()
	w := StartWriter(WriterConfig{Store: st, Key: key, CheckpointInterval: time.Hour, BatchSize: 3})
	for i := range n {
		r := Record{At: time.Now(), Toolset: "forgejo", Tool: "get_pull_request_diff", Outcome: "ok",
			Target:   Target{Owner: "o", Repo: "r", Index: int64(i + 1)},
			Evidence: Evidence{ResultSHA256: SHA256Hex([]byte{byte(i)})}}
		if !w.Enqueue(r) {
			t.Fatal("queue refused a record")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

// TestVerifyNamesTampering writes a chain on each backend, tampers with
// its rows as the case says, and checks that Verify names the first
// record (or checkpoint) concerned.
func TestVerifyNamesTampering(t *testing.T) {
	cases := []struct {
		name     string
		tamper   []string // statements, $1 is the writer
		rehash   bool     // then record 4's hash is recomputed
		wantKind string
		wantSeq  int64
	}{
		{"intact", nil, false, "", 0},
		{"altered record", []string{`UPDATE audit_records SET record = REPLACE(record, '"outcome":"ok"', '"outcome":"not_found"') WHERE writer = $1 AND seq = 4`}, false, Altered, 4},
		{"altered record with its hash recomputed", []string{
			`UPDATE audit_records SET record = REPLACE(record, '"index":4', '"index":5') WHERE writer = $1 AND seq = 4`,
		}, true, Altered, 4},
		{"deleted record", []string{`DELETE FROM audit_records WHERE writer = $1 AND seq = 4`}, false, Missing, 4},
		{"deleted last record", []string{`DELETE FROM audit_records WHERE writer = $1 AND seq = 10`}, false, Missing, 10},
		{"reordered records", []string{
			`UPDATE audit_records SET seq = -4 WHERE writer = $1 AND seq = 4`,
			`UPDATE audit_records SET seq = 4 WHERE writer = $1 AND seq = 5`,
			`UPDATE audit_records SET seq = 5 WHERE writer = $1 AND seq = -4`,
		}, false, Reordered, 4},
		{"altered checkpoint", []string{`UPDATE audit_checkpoints SET seq = 9 WHERE writer = $1`}, false, BadCheckpoint, 9},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					st, db := b.open(t)
					key := testKey(t)
					writer := writeChain(t, st, key, 10)
					ctx := context.Background()
					for _, q := range tc.tamper {
						if _, err := db.ExecContext(ctx, q, writer); err != nil {
							t.Fatalf("%s: %v", q, err)
						}
					}
					if tc.rehash {
						rehash(t, db, writer, 4)
					}
					rep, err := Verify(ctx, st, []ed25519.PublicKey{key.Public().(ed25519.PublicKey)})
					if err != nil {
						t.Fatal(err)
					}
					if len(rep.Chains) != 1 || rep.Chains[0].Writer != writer {
						t.Fatalf("chains %+v, want the one of %s", rep.Chains, writer)
					}
					got := rep.Chains[0].Problem
					switch {
					case tc.wantKind == "" && got != nil:
						t.Fatalf("intact chain: %v", got)
					case tc.wantKind == "":
						if rep.Chains[0].Records != 10 || rep.Chains[0].Checkpoints != 1 || !rep.OK() {
							t.Fatalf("report %+v, want 10 records and 1 checkpoint", rep.Chains[0])
						}
					case got == nil:
						t.Fatalf("verify found nothing, want %s record %d", tc.wantKind, tc.wantSeq)
					case got.Kind != tc.wantKind || got.Seq != tc.wantSeq:
						t.Fatalf("problem %v, want %s record %d", got, tc.wantKind, tc.wantSeq)
					}
				})
			}
		})
	}
}

// rehash sets record seq's hash to the SHA-256 of its (altered) text, as
// an attacker who knows the format would.
func rehash(t *testing.T, db *sql.DB, writer string, seq int64) {
	t.Helper()
	var text string
	if err := db.QueryRow(`SELECT record FROM audit_records WHERE writer = $1 AND seq = $2`, writer, seq).Scan(&text); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit_records SET hash = $1 WHERE writer = $2 AND seq = $3`, Hash([]byte(text)), writer, seq); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyUntrustedKey(t *testing.T) {
	st := storetest.SQLite(t)
	writeChain(t, st, testKey(t), 2)
	rep, err := Verify(context.Background(), st, []ed25519.PublicKey{testKey(t).Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Chains[0].Problem.Kind != BadCheckpoint {
		t.Fatalf("report %+v, want the checkpoint's key refused", rep.Chains)
	}
}

// TestExportVerifiesOffline exports a chain, verifies the file with only
// the public key, and checks that a swapped pair of lines is named.
func TestExportVerifiesOffline(t *testing.T) {
	st := storetest.SQLite(t)
	key := testKey(t)
	writeChain(t, st, key, 5)
	var buf bytes.Buffer
	if err := Export(context.Background(), st, &buf); err != nil {
		t.Fatal(err)
	}
	pub := []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}
	verify := func(b []byte) Report {
		t.Helper()
		src, err := ReadExport(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(context.Background(), src, pub)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := verify(buf.Bytes()); !rep.OK() || rep.Chains[0].Records != 5 {
		t.Fatalf("export: %+v", rep.Chains)
	}
	// Lines in another order are the same chain; a record moved to another
	// place is named.
	lines := strings.SplitAfter(buf.String(), "\n")
	lines[1], lines[2] = lines[2], lines[1]
	if rep := verify([]byte(strings.Join(lines, ""))); !rep.OK() {
		t.Fatalf("lines 2 and 3 swapped: %+v, want the chain intact", rep.Chains)
	}
	moved := strings.Replace(strings.Replace(buf.String(), `"seq":2,"at"`, `"seq":-2,"at"`, 1), `"seq":3,"at"`, `"seq":2,"at"`, 1)
	moved = strings.Replace(moved, `"seq":-2,"at"`, `"seq":3,"at"`, 1)
	if p := verify([]byte(moved)).Chains[0].Problem; p == nil || p.Kind != Reordered || p.Seq != 2 {
		t.Fatalf("records 2 and 3 swapped places: %v, want place 2 named", p)
	}
	altered := strings.Replace(buf.String(), `"index":2`, `"index":7`, 1)
	if p := verify([]byte(altered)).Chains[0].Problem; p == nil || p.Kind != Altered || p.Seq != 2 {
		t.Fatalf("altered line: %v, want record 2 altered", p)
	}
}

// TestKeyFiles: keys are generated 0600, read back the same, and refused
// once group or others may read them.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	k1, err := LoadSigningKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadSigningKey(dir)
	if err != nil || !k1.Equal(k2) {
		t.Fatalf("second load: %v, same key %v", err, k1.Equal(k2))
	}
	fi, err := os.Stat(filepath.Join(dir, SigningKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", fi.Mode(), err)
	}
	if err := os.Chmod(filepath.Join(dir, SigningKeyFile), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigningKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("group-readable key: %v, want it refused", err)
	}
	f1, err := LoadFingerprintKey(dir)
	if err != nil || len(f1) != 32 {
		t.Fatalf("fingerprint key: %v (%d bytes)", err, len(f1))
	}
}

// TestQueueFull: a full queue drops in best_effort (counted) and refuses
// the call with audit_unavailable in required.
func TestQueueFull(t *testing.T) {
	for _, mode := range []Mode{BestEffort, Required} {
		t.Run(string(mode), func(t *testing.T) {
			dropped := 0
			w := &Writer{queue: make(chan Record, 1), done: make(chan struct{}), cfg: WriterConfig{Counters: Counters{
				Dropped: func(reason string, n int) {
					if reason == "queue_full" {
						dropped += n
					}
				}}}}
			r := NewRecorder(mode, w, []byte("k"))
			var counted []string
			r.Calls = func(kind, outcome string) { counted = append(counted, kind+"/"+outcome) }
			ctx := withPrincipal(context.Background(), "tok")
			if err := r.Record(ctx, Call{Tool: "t", Outcome: "ok", Result: answered("{}")}); err != nil {
				t.Fatalf("first record: %v", err)
			}
			err := r.Record(ctx, Call{Tool: "t", Outcome: "ok", Result: answered("{}")})
			if dropped != 1 {
				t.Fatalf("dropped %d, want 1", dropped)
			}
			if mode == BestEffort && err != nil {
				t.Fatalf("best_effort: %v", err)
			}
			if mode == Required && toolerr.As(err).Code != toolerr.AuditUnavailable {
				t.Fatalf("required: %v, want audit_unavailable", err)
			}
			// Calls counts what the caller was answered.
			want := map[Mode]string{BestEffort: "forgejo_bearer/ok", Required: "forgejo_bearer/audit_unavailable"}[mode]
			if len(counted) != 2 || counted[0] != "forgejo_bearer/ok" || counted[1] != want {
				t.Fatalf("counted %v, want forgejo_bearer/ok then %s", counted, want)
			}
			if err := r.Record(context.Background(), Call{Tool: "t", Outcome: "ok"}); err != nil {
				t.Fatalf("anonymous call: %v, want it not recorded", err)
			}
			if len(w.queue) != 1 {
				t.Fatalf("queue holds %d, want the first record only", len(w.queue))
			}
		})
	}
}

// withPrincipal returns ctx carrying the principal of a Forgejo bearer.
func withPrincipal(ctx context.Context, token string) context.Context {
	return middleware.WithPrincipal(ctx, middleware.NewPassthrough(token))
}

// TestRecordHoldsNoSecret: the record of a Forgejo bearer's call holds
// neither the bearer nor its plain SHA-256 (nor the budget key made of
// it), only the keyed fingerprint, which differs under another key.
func TestRecordHoldsNoSecret(t *testing.T) {
	const token = "forgejo-bearer-secret-0123456789"
	text := func(key string) string {
		w := &Writer{queue: make(chan Record, 1), done: make(chan struct{})}
		r := NewRecorder(BestEffort, w, []byte(key))
		if err := r.Record(withPrincipal(context.Background(), token), Call{Tool: "t", Outcome: "ok", Result: answered("{}")}); err != nil {
			t.Fatal(err)
		}
		b, err := (<-w.queue).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := text("key-a"), text("key-b")
	for _, secret := range []string{token, SHA256Hex([]byte(token)), middleware.CredentialHash(token)} {
		if strings.Contains(a, secret) {
			t.Fatalf("record %s holds %q", a, secret)
		}
	}
	if !strings.Contains(a, `"fingerprint":"`) || a == b {
		t.Fatalf("records %s and %s: want a fingerprint that depends on the key", a, b)
	}
}

// answered is the Call.Result of an answer whose text is text.
func answered(text string) func() string { return func() string { return text } }

// failingStore refuses the first batch it is given.
type failingStore struct {
	store.Store
	failed bool
}

func (f *failingStore) AppendAuditRecords(ctx context.Context, rows []store.AuditRow) error {
	if !f.failed {
		f.failed = true
		return errors.New("disk full")
	}
	return f.Store.AppendAuditRecords(ctx, rows)
}

// TestWriterRefusedBatchLeavesNoGap: a batch the store refuses is counted
// as write_failed and the chain does not advance, so the next batch
// continues it and the chain verifies.
func TestWriterRefusedBatchLeavesNoGap(t *testing.T) {
	st := storetest.SQLite(t)
	key := testKey(t)
	failed, written := 0, 0
	w := StartWriter(WriterConfig{Store: &failingStore{Store: st}, Key: key, BatchSize: 2, Counters: Counters{
		Written: func(n int) { written += n },
		Dropped: func(reason string, n int) {
			if reason == "write_failed" {
				failed += n
			}
		},
	}})
	for i := range 5 {
		if !w.Enqueue(Record{At: time.Now(), Tool: "t", Outcome: "ok", Target: Target{Index: int64(i + 1)}}) {
			t.Fatal("queue refused a record")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if failed != 2 || written != 3 {
		t.Fatalf("%d failed, %d written; want the first batch of 2 failed and 3 written", failed, written)
	}
	rep, err := Verify(ctx, st, []ed25519.PublicKey{key.Public().(ed25519.PublicKey)})
	if err != nil || !rep.OK() || rep.Chains[0].Records != 3 {
		t.Fatalf("verify: %v %+v", err, rep.Chains)
	}
}

// TestWriterCheckpointsAtInterval: with records flowing, the writer signs
// its head every CheckpointInterval, not only at Close.
func TestWriterCheckpointsAtInterval(t *testing.T) {
	st := storetest.SQLite(t)
	w := StartWriter(WriterConfig{Store: st, Key: testKey(t), CheckpointInterval: 20 * time.Millisecond, FlushInterval: 5 * time.Millisecond})
	defer w.Close(context.Background())
	deadline := time.Now().Add(20 * time.Second)
	for i := int64(1); ; i++ {
		w.Enqueue(Record{At: time.Now(), Tool: "t", Outcome: "ok", Target: Target{Index: i}})
		cps, err := st.ListAuditCheckpoints(context.Background(), w.ID())
		if err != nil {
			t.Fatal(err)
		}
		if len(cps) >= 2 {
			if cps[1].Seq <= cps[0].Seq {
				t.Fatalf("checkpoints %+v do not advance", cps)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d checkpoints after 20 s, want 2 before Close", len(cps))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSHA256String(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 49000} {
		s := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		if got, want := sha256String(s), SHA256Hex([]byte(s)); got != want {
			t.Fatalf("%d bytes: %s, want %s", len(s), got, want)
		}
	}
}

// TestRecordPrincipals: each kind of caller is named in its record as
// docs/audit.md says: an OAuth consent with its subject, client, project
// and consent; the stdio process's credential (token or Basic) only by a
// keyed fingerprint, with the transport and JSON-RPC id; an anonymous
// caller only when Anonymous is set, by its address key.
func TestRecordPrincipals(t *testing.T) {
	oauth := &middleware.Principal{Kind: middleware.OAuthConsent, Subject: "alice", ClientID: "cli_1", ProjectID: "prj_1", ConsentID: "grt_1"}
	addr := &middleware.Record{}
	addr.SetCall(middleware.Call{Method: "tools/call", Tool: "t", ID: []byte(`"7"`)})
	cases := []struct {
		name      string
		ctx       context.Context
		stdio     bool
		anonymous bool
		want      Principal
		wantID    string
		secret    string
	}{
		{"oauth", middleware.WithPrincipal(context.Background(), oauth), false, false,
			Principal{Kind: KindOAuth, Subject: "alice", ClientID: "cli_1", ProjectID: "prj_1", ConsentID: "grt_1"}, "", ""},
		{"stdio token", middleware.WithRecord(middleware.WithPrincipal(context.Background(), middleware.NewProcessPrincipal(middleware.Credential{Token: "process-token-0123456789"})), addr), true, false,
			Principal{Kind: KindProcess}, `"7"`, "process-token-0123456789"},
		{"stdio basic", middleware.WithRecord(middleware.WithPrincipal(context.Background(), middleware.NewProcessPrincipal(middleware.Credential{Username: "bot", Password: "basic-password-0123456789"})), addr), true, false,
			Principal{Kind: KindProcess}, `"7"`, "basic-password-0123456789"},
		{"anonymous", context.Background(), false, true, Principal{Kind: KindAnonymous}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &Writer{queue: make(chan Record, 1), done: make(chan struct{})}
			r := NewRecorder(BestEffort, w, []byte("k"))
			r.Anonymous = tc.anonymous
			var counted []string
			r.Calls = func(kind, outcome string) { counted = append(counted, kind+"/"+outcome) }
			if err := r.Record(tc.ctx, Call{Tool: "t", Outcome: "ok", Result: answered("{}"), Stdio: tc.stdio}); err != nil {
				t.Fatal(err)
			}
			got := <-w.queue
			fp := got.Principal.Fingerprint
			got.Principal.Fingerprint = ""
			if got.Principal != tc.want || got.RequestID != tc.wantID || (got.Transport == "stdio") != tc.stdio {
				t.Fatalf("record %+v, want principal %+v, request id %q, stdio %v", got, tc.want, tc.wantID, tc.stdio)
			}
			if got.Evidence.ResultSHA256 != SHA256Hex([]byte("{}")) {
				t.Fatalf("result hash %q, want the SHA-256 of the result text", got.Evidence.ResultSHA256)
			}
			if (fp != "") != (tc.secret != "") || len(counted) != 1 || counted[0] != tc.want.Kind+"/ok" {
				t.Fatalf("fingerprint %q, counted %v", fp, counted)
			}
			b, _ := got.Encode()
			if tc.secret != "" && strings.Contains(string(b), tc.secret) {
				t.Fatalf("record %s holds the credential", b)
			}
		})
	}
	w := &Writer{queue: make(chan Record, 1), done: make(chan struct{})}
	if err := NewRecorder(BestEffort, w, []byte("k")).Record(context.Background(), Call{Tool: "t", Outcome: "ok"}); err != nil || len(w.queue) != 0 {
		t.Fatalf("anonymous call with Anonymous unset: %v, %d queued; want none", err, len(w.queue))
	}
}

// TestWriterWakesPerBatch: the writer is woken when a batch's worth is
// queued, not by each record: fewer records wait for the flush tick, and
// a full batch is written at once without it.
func TestWriterWakesPerBatch(t *testing.T) {
	st := storetest.SQLite(t)
	var written atomic.Int64
	w := StartWriter(WriterConfig{Store: st, BatchSize: 4, FlushInterval: time.Hour,
		Counters: Counters{Written: func(n int) { written.Add(int64(n)) }}})
	for i := range 3 {
		if !w.Enqueue(Record{At: time.Now(), Tool: "t", Outcome: "ok", Target: Target{Index: int64(i + 1)}}) {
			t.Fatal("queue refused a record")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := written.Load(); n != 0 {
		t.Fatalf("%d records written before a batch's worth was queued or the tick", n)
	}
	if !w.Enqueue(Record{At: time.Now(), Tool: "t", Outcome: "ok", Target: Target{Index: 4}}) {
		t.Fatal("queue refused a record")
	}
	if n := awaitWritten(&written, 4); n != 4 {
		t.Fatalf("%d records written once a batch's worth was queued, want 4 without waiting for the hourly tick", n)
	}
	// Close writes what is queued.
	for i := range 2 {
		if !w.Enqueue(Record{At: time.Now(), Tool: "t", Outcome: "ok", Target: Target{Index: int64(i + 5)}}) {
			t.Fatal("queue refused a record")
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := st.ListAuditRecords(context.Background(), w.ID(), 0, 100)
	if err != nil || len(rows) != 6 {
		t.Fatalf("%d rows stored (%v), want 6", len(rows), err)
	}
}

// TestWriterBatchFitsTheQueue: a batch size over the queue's is cut to
// it, so a full queue still wakes the writer before the tick.
func TestWriterBatchFitsTheQueue(t *testing.T) {
	st := storetest.SQLite(t)
	var written atomic.Int64
	w := StartWriter(WriterConfig{Store: st, QueueSize: 2, BatchSize: 8, FlushInterval: time.Hour,
		Counters: Counters{Written: func(n int) { written.Add(int64(n)) }}})
	defer w.Close(context.Background())
	for i := range 2 {
		if !w.Enqueue(Record{At: time.Now(), Tool: "t", Outcome: "ok", Target: Target{Index: int64(i + 1)}}) {
			t.Fatal("queue refused a record")
		}
	}
	if n := awaitWritten(&written, 2); n != 2 {
		t.Fatalf("%d records written with the queue full, want 2 without waiting for the hourly tick", n)
	}
}

// awaitWritten waits up to 10 s for the writer's Written count to reach
// want, and returns the count then.
func awaitWritten(written *atomic.Int64, want int64) int64 {
	deadline := time.Now().Add(10 * time.Second)
	for written.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return written.Load()
}
