package oauth

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agent-gateway/agent-gateway/store"
)

// invalidClientText is what an invalid_client error says first (the words
// of RFC 6749 §5.2), before what is wrong with this client.
const invalidClientText = "Client authentication failed (e.g., unknown client, no client authentication included, or unsupported authentication method)."

// unknownClient is the refusal of a client ID no client has.
var unknownClient = refuse(codeInvalidClient, invalidClientText+" The requested OAuth 2.0 Client does not exist.")

// client is what the decisions need of a client: every client of this
// server is public (PKCE, no secret; RFC 6749 §2.1), registered
// (RFC 7591) or named by a metadata document (cimd.go).
type client struct {
	id           string
	name         string
	redirectURIs []string
}

// lookupClient reads a client by ID: a registered one from the store, or a
// metadata document. Not found is invalid_client; a metadata document that
// cannot be used is its *metadataRefusal (writeMetadataRefusal renders
// it); a store failure is unavailable, but an ID the store refuses (bytes
// PostgreSQL cannot hold) is no client's, so invalid_client.
func (s *Server) lookupClient(ctx context.Context, id string) (client, error) {
	if isMetadataURL(id) {
		if s.cimd == nil {
			return client{}, unknownClient
		}
		doc, err := s.cimd.get(ctx, id)
		if err != nil {
			return client{}, err
		}
		return client{id: doc.ClientID, name: doc.ClientName, redirectURIs: doc.RedirectURIs}, nil
	}
	c, err := s.cfg.Store.GetClient(ctx, id)
	if err != nil && !store.Answered(err) {
		return client{}, unavailable(err)
	}
	if err != nil { // not found, or an ID the store cannot even hold
		return client{}, unknownClient
	}
	return client{id: c.ClientID, name: c.Name, redirectURIs: c.RedirectURIs}, nil
}

// clientID is the ID a token or revocation request names its public
// client by: client_id in the form, or the user of HTTP Basic
// authentication (RFC 6749 §2.3.1), whose password a public client has
// none of and is not read. Neither is invalid_request.
func clientID(r *http.Request) (string, *oauthError) {
	if user, _, ok := r.BasicAuth(); ok && user != "" {
		id, err := url.QueryUnescape(user)
		if err != nil {
			return "", refuse(codeInvalidRequest, "The client ID in the Authorization header is not form-encoded.")
		}
		return id, nil
	}
	if id := r.PostForm.Get("client_id"); id != "" {
		return id, nil
	}
	return "", refuse(codeInvalidRequest, "Client credentials missing or malformed: send client_id.")
}

// authenticateClient identifies the client of a token or revocation
// request (public clients only identify themselves).
func (s *Server) authenticateClient(r *http.Request) (client, error) {
	id, e := clientID(r)
	if e != nil {
		return client{}, e
	}
	return s.lookupClient(r.Context(), id)
}

// writeRefusal renders an error of the token or revocation endpoint: a
// metadata document's refusal its own way, anything else as an OAuth JSON
// error; it logs first.
func (s *Server) writeRefusal(w http.ResponseWriter, msg string, err error) {
	s.logProtocolError(msg, err)
	if writeMetadataRefusal(w, err) {
		return
	}
	writeOAuthError(w, asOAuthError(err))
}
