package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/agent-gateway/agent-gateway/store"
)

// Admin commands for OAuth clients. Registration is open (RFC 7591), so
// an operator needs to see what registered and remove what should not be
// there; clients that never obtained a token also expire by themselves
// (oauth.unused_client_ttl).

func clientFields(c store.Client) []field {
	return []field{
		{"client_id", c.ClientID}, {"client_name", c.Name}, {"redirect_uris", c.RedirectURIs},
		{"created_at", c.CreatedAt}, {"first_token_at", c.FirstTokenAt},
	}
}

func adminListClients(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	unused := fs.Bool("unused", false, "only clients that never obtained a token (the purge deletes them after oauth.unused_client_ttl)")
	return func(ctx context.Context, a *adminRun) error {
		cs, err := a.st.ListClients(ctx, *unused)
		if err != nil {
			return err
		}
		return a.printList(records(cs, clientFields))
	}
}

func adminDeleteClient(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	id := fs.String("client-id", "", "client ID (cli_…)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"client-id": id}); err != nil {
			return err
		}
		c, err := a.st.GetClient(ctx, *id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("client %q does not exist (see admin list-clients)", *id)
		}
		if err != nil {
			return err
		}
		if err := a.st.DeleteClient(ctx, *id); err != nil {
			return err
		}
		return a.print(append(clientFields(c), field{"deleted", true}, field{"note", "every consent of this client is revoked"})...)
	}
}
