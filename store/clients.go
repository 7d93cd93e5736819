package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

const clientColumns = `client_id, name, redirect_uris, created_at, first_token_at`

// scanClient reads one row of clientColumns.
func scanClient(row rowScanner) (Client, error) {
	var c Client
	var uris string
	var created, firstToken dbTime
	if err := row.Scan(&c.ClientID, &c.Name, &uris, &created, &firstToken); err != nil {
		return Client{}, err
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return Client{}, fmt.Errorf("client %s: stored redirect_uris: %w", c.ClientID, err)
	}
	c.CreatedAt, c.FirstTokenAt = created.t, firstToken.ptr()
	return c, nil
}

// GetClient implements ClientStore.
func (s *sqlStore) GetClient(ctx context.Context, clientID string) (Client, error) {
	c, err := scanClient(s.db.QueryRowContext(ctx,
		`SELECT `+clientColumns+` FROM oauth_clients WHERE client_id = $1`, clientID))
	if err != nil {
		return Client{}, notFound(err, "client")
	}
	return c, nil
}

// ListClients implements ClientStore.
func (s *sqlStore) ListClients(ctx context.Context, unusedOnly bool) ([]Client, error) {
	q := `SELECT ` + clientColumns + ` FROM oauth_clients`
	if unusedOnly {
		q += ` WHERE first_token_at IS NULL`
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_at, client_id`)
	if err != nil {
		return nil, fmt.Errorf("listing clients: %w", err)
	}
	defer rows.Close()
	out := []Client{}
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("listing clients: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing clients: %w", err)
	}
	return out, nil
}

// DeleteClient implements ClientStore: the registration goes, and in the
// same transaction every consent of the client is revoked, so that its
// tokens (which could otherwise still be refreshed) stop at once.
func (s *sqlStore) DeleteClient(ctx context.Context, clientID string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, "deleting client", `DELETE FROM oauth_clients WHERE client_id = $1`, clientID)
		if err != nil {
			return err
		}
		if err := oneRow(res, "client"); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, "revoking the client's consents",
			`UPDATE oauth_grants SET revoked_at = $1 WHERE client_id = $2 AND revoked_at IS NULL`, s.d.timeArg(s.now()), clientID)
		return err
	})
}
