package store

import "context"

// AppendAuditRecords implements Store.
func (t tracedStore) AppendAuditRecords(ctx context.Context, rows []AuditRow) error {
	return callErr(t, ctx, "AppendAuditRecords", func(ctx context.Context) error { return t.next.AppendAuditRecords(ctx, rows) })
}

// AddAuditCheckpoint implements Store.
func (t tracedStore) AddAuditCheckpoint(ctx context.Context, cp AuditCheckpoint) error {
	return callErr(t, ctx, "AddAuditCheckpoint", func(ctx context.Context) error { return t.next.AddAuditCheckpoint(ctx, cp) })
}

// ListAuditWriters implements Store.
func (t tracedStore) ListAuditWriters(ctx context.Context) ([]string, error) {
	return call(t, ctx, "ListAuditWriters", func(ctx context.Context) ([]string, error) { return t.next.ListAuditWriters(ctx) })
}

// ListAuditRecords implements Store.
func (t tracedStore) ListAuditRecords(ctx context.Context, writer string, afterSeq int64, limit int) ([]AuditRow, error) {
	return call(t, ctx, "ListAuditRecords", func(ctx context.Context) ([]AuditRow, error) {
		return t.next.ListAuditRecords(ctx, writer, afterSeq, limit)
	})
}

// ListAuditCheckpoints implements Store.
func (t tracedStore) ListAuditCheckpoints(ctx context.Context, writer string) ([]AuditCheckpoint, error) {
	return call(t, ctx, "ListAuditCheckpoints", func(ctx context.Context) ([]AuditCheckpoint, error) {
		return t.next.ListAuditCheckpoints(ctx, writer)
	})
}

// PurgeAuditRecords implements Store.
func (t tracedStore) PurgeAuditRecords(ctx context.Context, p AuditPurgePolicy) (PurgeResult, error) {
	return call(t, ctx, "PurgeAuditRecords", func(ctx context.Context) (PurgeResult, error) { return t.next.PurgeAuditRecords(ctx, p) })
}
