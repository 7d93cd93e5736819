package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// preparedQueryer is the pool as a queryer that runs each query through a
// statement prepared once, on the query's first use, instead of
// compiling its text on every call: modernc's SQLite parses and plans the
// text of an unprepared query each time, which a profile of the gateway
// put at 7% of its CPU for the bearer's token lookup alone. database/sql
// keeps a statement prepared on each pooled connection it has run on and
// prepares it again on one that has not. The text is the same on both
// backends (see dialect), so it is also the key.
//
// It is for the reads the request path makes on every call. Only pass it
// queries whose text is fixed: a statement stays prepared until the store
// closes. Transactions keep running their text: a transaction's
// statements run once each.
type preparedQueryer struct {
	db *sql.DB
	// prepare is false where the driver already prepares and caches each
	// query's text per connection (dialect.cachesStatements): every query
	// then runs as text.
	prepare bool

	mu     sync.RWMutex
	stmts  map[string]*sql.Stmt
	closed bool
}

func newPreparedQueryer(db *sql.DB, prepare bool) *preparedQueryer {
	return &preparedQueryer{db: db, prepare: prepare, stmts: map[string]*sql.Stmt{}}
}

// stmt returns the prepared statement of query, preparing it on first
// use, or nil when it is not to be prepared or cannot be (the pool is
// closed, the database does not answer): the caller then runs the text,
// which fails with that query's own error or, if the trouble has passed,
// succeeds. A failed prepare is not remembered, so the next call tries
// again.
func (p *preparedQueryer) stmt(ctx context.Context, query string) *sql.Stmt {
	if !p.prepare {
		return nil
	}
	p.mu.RLock()
	st, closed := p.stmts[query], p.closed
	p.mu.RUnlock()
	if st != nil || closed {
		return st
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev := p.stmts[query]; prev != nil || p.closed {
		// Another call prepared it first, or the store closed meanwhile.
		st.Close()
		return prev
	}
	p.stmts[query] = st
	return st
}

// QueryRowContext implements queryer.
func (p *preparedQueryer) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

// QueryContext implements queryer.
func (p *preparedQueryer) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

// ExecContext implements queryer.
func (p *preparedQueryer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.db.ExecContext(ctx, query, args...)
}

// close closes every statement and prepares no more. A call still
// holding one gets "sql: statement is closed"; later calls run their
// text on the closed pool and get "sql: database is closed".
func (p *preparedQueryer) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for _, st := range p.stmts {
		errs = append(errs, st.Close())
	}
	clear(p.stmts)
	return errors.Join(errs...)
}
