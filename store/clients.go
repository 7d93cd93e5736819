package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// RegisterClient implements ClientStore.
func (s *sqlStore) RegisterClient(ctx context.Context, name string, redirectURIs []string) (Client, error) {
	if err := validateName("client_name", name); err != nil {
		return Client{}, err
	}
	if err := validateRedirectURIs(redirectURIs); err != nil {
		return Client{}, err
	}
	c := Client{ClientID: newID("cli"), Name: name, RedirectURIs: slices.Clone(redirectURIs), CreatedAt: s.now()}
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return Client{}, fmt.Errorf("encoding redirect_uris: %w", err)
	}
	_, err = s.exec(ctx, s.db, "registering client",
		`INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)`,
		c.ClientID, c.Name, string(uris), s.d.timeArg(c.CreatedAt))
	if err != nil {
		return Client{}, err
	}
	return c, nil
}

// GetClient implements ClientStore.
func (s *sqlStore) GetClient(ctx context.Context, clientID string) (Client, error) {
	var c Client
	var uris string
	var created dbTime
	err := s.db.QueryRowContext(ctx,
		`SELECT client_id, name, redirect_uris, created_at FROM oauth_clients WHERE client_id = $1`, clientID).
		Scan(&c.ClientID, &c.Name, &uris, &created)
	if err != nil {
		return Client{}, notFound(err, "client")
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return Client{}, fmt.Errorf("client %s: stored redirect_uris: %w", clientID, err)
	}
	c.CreatedAt = created.t
	return c, nil
}

// DeleteClient implements ClientStore.
func (s *sqlStore) DeleteClient(ctx context.Context, clientID string) error {
	res, err := s.exec(ctx, s.db, "deleting client", `DELETE FROM oauth_clients WHERE client_id = $1`, clientID)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("deleting client: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: client", ErrNotFound)
	}
	return nil
}
