package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// Mode is audit.mode.
type Mode string

// The modes.
const (
	// Off records nothing (the default).
	Off Mode = "off"
	// BestEffort records every authenticated call it can queue; a full
	// queue drops the record and counts it.
	BestEffort Mode = "best_effort"
	// Required fails a call whose record cannot be queued, with
	// audit_unavailable, before anything is answered.
	Required Mode = "required"
)

// ParseMode parses audit.mode.
func ParseMode(s string) (Mode, bool) {
	switch m := Mode(s); m {
	case Off, BestEffort, Required:
		return m, true
	}
	return "", false
}

// Writer defaults.
const (
	DefaultQueueSize     = 4096
	DefaultBatchSize     = 256
	DefaultFlushInterval = 200 * time.Millisecond
	// writeTimeout bounds one batch insert or checkpoint.
	writeTimeout = 10 * time.Second
)

// Counters observe the writer; each may be nil.
type Counters struct {
	// Written counts records stored.
	Written func(n int)
	// Dropped counts records not stored: reason "queue_full" (never
	// queued) or "write_failed" (queued, but the store refused the batch).
	Dropped func(reason string, n int)
	// Checkpoint counts checkpoints: outcome "ok" or "failed".
	Checkpoint func(outcome string)
}

// WriterConfig configures a Writer.
type WriterConfig struct {
	Store store.AuditStore
	// Key signs checkpoints.
	Key ed25519.PrivateKey
	// CheckpointInterval is how often the chain head is signed when it
	// moved; a last checkpoint is signed at Close.
	CheckpointInterval time.Duration
	QueueSize          int
	BatchSize          int
	FlushInterval      time.Duration
	Counters           Counters
	Log                *slog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Writer is one chain: it takes records from a bounded queue and appends
// them in batches from one goroutine, so that a tool call never waits on
// the store, and signs its head at a fixed interval. The chain advances
// only on a committed batch, so a batch the store refused leaves no gap.
type Writer struct {
	id    string
	cfg   WriterConfig
	queue chan Record
	// batchReady wakes the writer when a batch's worth is queued. The
	// writer does not wait on the queue itself: a receive per record woke
	// it once a call, which cost a busy gateway more than the record.
	batchReady chan struct{}
	done       chan struct{}
	wg         sync.WaitGroup
	once       sync.Once

	// chain state, owned by the goroutine.
	seq       int64
	head      string
	signedSeq int64
	// a batch's rows, the ends of its records in text, and text, the
	// records' canonical encodings back to back: reused by each write.
	rows []store.AuditRow
	ends []int
	text []byte
}

// NewWriterID returns a fresh writer id: one per process, so that
// replicas and restarts each keep a chain of their own.
func NewWriterID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "w_" + hex.EncodeToString(b)
}

// StartWriter starts a writer with a fresh id.
func StartWriter(cfg WriterConfig) *Writer {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > store.MaxAuditBatch {
		cfg.BatchSize = DefaultBatchSize
	}
	// The writer is woken when a batch's worth is queued; a batch larger
	// than the queue would never be, and records would wait for the tick
	// with the queue full.
	cfg.BatchSize = min(cfg.BatchSize, cfg.QueueSize)
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	w := &Writer{id: NewWriterID(), cfg: cfg, queue: make(chan Record, cfg.QueueSize), batchReady: make(chan struct{}, 1), done: make(chan struct{}), head: zeroHash}
	w.wg.Add(1)
	go w.run()
	return w
}

// ID is the writer's chain id.
func (w *Writer) ID() string { return w.id }

// Enqueue queues r without waiting; false means the queue is full (or
// the writer closed) and r was not queued.
func (w *Writer) Enqueue(r Record) bool {
	select {
	case <-w.done:
		return false
	default:
	}
	select {
	case w.queue <- r:
		if len(w.queue) >= w.cfg.BatchSize {
			select {
			case w.batchReady <- struct{}{}:
			default: // the writer has been woken already
			}
		}
		return true
	default:
		return false
	}
}

// Close stops taking records, writes what is queued, signs a last
// checkpoint and returns once done or ctx ends.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() { close(w.done) })
	finished := make(chan struct{})
	go func() { w.wg.Wait(); close(finished) }()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) run() {
	defer w.wg.Done()
	flush := time.NewTicker(w.cfg.FlushInterval)
	defer flush.Stop()
	var checkpoint <-chan time.Time
	if w.cfg.CheckpointInterval > 0 {
		t := time.NewTicker(w.cfg.CheckpointInterval)
		defer t.Stop()
		checkpoint = t.C
	}
	batch := make([]Record, 0, w.cfg.BatchSize)
	// drain takes what is queued, writing each full batch; the rest waits
	// in batch for the next tick. Records queued meanwhile are taken too,
	// so a writer behind keeps writing whole batches.
	drain := func() {
		for {
			select {
			case r := <-w.queue:
				batch = append(batch, r)
				if len(batch) == w.cfg.BatchSize {
					batch = w.write(batch)
				}
			default:
				return
			}
		}
	}
	for {
		select {
		case <-w.batchReady:
			drain()
		case <-flush.C:
			drain()
			batch = w.write(batch)
		case <-checkpoint:
			drain()
			batch = w.write(batch)
			w.checkpoint()
		case <-w.done:
			// What was queued before Close is written; Enqueue takes
			// nothing more, so the drain ends.
			drain()
			w.write(batch)
			w.checkpoint()
			return
		}
	}
}

// write chains and appends batch, returning it emptied for reuse. Every
// record's canonical text goes into one buffer, turned into one string
// per batch that the rows slice: a string per record was as many
// allocations again, and the collector's work grew with them.
func (w *Writer) write(batch []Record) []Record {
	if len(batch) == 0 {
		return batch
	}
	rows, ends := w.rows[:0], w.ends[:0]
	text := w.text[:0]
	seq, prev := w.seq, w.head
	for i := range batch {
		r := &batch[i]
		seq++
		r.V, r.Writer, r.Seq, r.Prev = Version, w.id, seq, prev
		start := len(text)
		var err error
		if text, err = r.appendCanonical(text); err != nil {
			// Only a time past year 9999 fails; the record is dropped and
			// the chain goes on without it.
			w.cfg.Log.Error("audit: record not encoded", "err", err)
			text = text[:start]
			seq--
			w.drop("write_failed", 1)
			continue
		}
		prev = Hash(text[start:])
		rows = append(rows, store.AuditRow{Writer: w.id, Seq: seq, At: r.At, Hash: prev})
		ends = append(ends, len(text))
	}
	all, start := string(text), 0
	for i, end := range ends {
		rows[i].Record, start = all[start:end], end
	}
	w.rows, w.ends, w.text = rows, ends, text
	defer clear(w.rows) // the batch's strings are not kept past it
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := w.cfg.Store.AppendAuditRecords(ctx, rows); err != nil && !w.committed(ctx, rows) {
		w.cfg.Log.Error("audit: records not stored", "writer", w.id, "records", len(rows), "err", err)
		w.drop("write_failed", len(rows))
		return batch[:0]
	}
	w.seq, w.head = seq, prev
	if w.cfg.Counters.Written != nil {
		w.cfg.Counters.Written(len(rows))
	}
	return batch[:0]
}

// committed reports whether rows are stored after all: a commit whose
// acknowledgement was lost must still advance the chain, or every later
// batch would collide with it.
func (w *Writer) committed(ctx context.Context, rows []store.AuditRow) bool {
	got, err := w.cfg.Store.ListAuditRecords(ctx, w.id, w.seq, len(rows))
	return err == nil && len(got) == len(rows) && got[len(got)-1].Hash == rows[len(rows)-1].Hash
}

// checkpoint signs the chain head if it moved since the last checkpoint.
func (w *Writer) checkpoint() {
	if w.seq == w.signedSeq || w.cfg.Key == nil {
		return
	}
	cp := signCheckpoint(w.cfg.Key, w.id, w.seq, w.head, w.cfg.Now())
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := w.cfg.Store.AddAuditCheckpoint(ctx, cp); err != nil {
		w.cfg.Log.Error("audit: checkpoint not stored", "writer", w.id, "seq", w.seq, "err", err)
		if w.cfg.Counters.Checkpoint != nil {
			w.cfg.Counters.Checkpoint("failed")
		}
		return
	}
	w.signedSeq = w.seq
	if w.cfg.Counters.Checkpoint != nil {
		w.cfg.Counters.Checkpoint("ok")
	}
}

func (w *Writer) drop(reason string, n int) {
	if w.cfg.Counters.Dropped != nil {
		w.cfg.Counters.Dropped(reason, n)
	}
}
