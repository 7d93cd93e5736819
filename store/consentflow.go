package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// The consent steps of the authorization server's browser flow each read
// or write in one store call (docs/oauth.md#store-calls): the consent page
// reads its choices with ConsentChoices, and an Allow is recorded with
// AnswerConsent, which also ends the login session, so that a session
// answers at most once.

// ConsentChoice is one project a consent page offers: a project the
// subject is a member of, with the subject's active consents to the client
// there, oldest first.
type ConsentChoice struct {
	Project  Project
	Consents []Consent
}

// ConsentAnswer is an Allow on the consent page: the login session it
// ends, the project chosen, and the code to store.
type ConsentAnswer struct {
	// SessionHash is the login session, signed in as Subject.
	SessionHash string
	Subject     string
	ProjectID   string
	// Scopes decides the consent's scopes from the subject's active
	// consents to the client on the project, oldest first, as read in the
	// transaction: the authorization server's rule (a re-authorization
	// keeps what was held), which the store does not make.
	Scopes func(active []Consent) []string
	// Code is the code to store. The store sets its ConsentID and Scopes;
	// its ClientID names the client of the consent.
	Code AuthorizationCode
}

// ConsentChoices implements AuthorizationServerStore: one query, the
// subject's memberships joined with their active consents to the client,
// a row per consent (or per project without one).
func (s *sqlStore) ConsentChoices(ctx context.Context, subject, clientID string) ([]ConsentChoice, error) {
	type row struct {
		p Project
		g *Consent
	}
	rows, err := queryAll(ctx, s.db, "listing consent choices", func(r rowScanner) (row, error) {
		var p Project
		var pCreated, gCreated dbTime
		var id, scopes sql.NullString
		if err := r.Scan(&p.ID, &p.AccountID, &p.Name, &pCreated, &id, &scopes, &gCreated); err != nil {
			return row{}, err
		}
		p.CreatedAt = pCreated.t
		if !id.Valid {
			return row{p: p}, nil
		}
		return row{p: p, g: &Consent{
			ID: id.String, ProjectID: p.ID, Subject: subject, ClientID: clientID,
			Scopes: strings.Fields(scopes.String), CreatedAt: gCreated.t,
		}}, nil
	}, `SELECT `+projectColumns+`, g.id, g.scopes, g.created_at
	      FROM projects p
	      JOIN project_members m ON m.project_id = p.id
	      LEFT JOIN oauth_grants g
	        ON g.project_id = p.id AND g.subject = m.subject AND g.client_id = $2 AND g.revoked_at IS NULL
	     WHERE m.subject = $1
	     ORDER BY p.name, p.id, g.created_at, g.id`, subject, clientID)
	if err != nil {
		return nil, err
	}
	var out []ConsentChoice
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Project.ID != r.p.ID {
			out = append(out, ConsentChoice{Project: r.p})
		}
		if r.g != nil {
			last := &out[len(out)-1]
			last.Consents = append(last.Consents, *r.g)
		}
	}
	return out, nil
}

// AnswerConsent implements AuthorizationServerStore.
func (s *sqlStore) AnswerConsent(ctx context.Context, a ConsentAnswer) (Consent, error) {
	if err := validateHash("session_hash", a.SessionHash); err != nil {
		return Consent{}, err
	}
	if err := validateText("subject", a.Subject, maxSubjectBytes); err != nil {
		return Consent{}, err
	}
	if err := validateText("client_id", a.Code.ClientID, maxURIBytes); err != nil {
		return Consent{}, err
	}
	if a.Scopes == nil {
		return Consent{}, invalid("scopes", "no rule decides them")
	}
	var g Consent
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// The session goes first: on PostgreSQL its row lock makes a
		// concurrent answer to the same session wait, then delete nothing.
		res, err := s.exec(ctx, tx, "ending login session",
			`DELETE FROM oauth_login_sessions WHERE session_hash = $1 AND subject = $2 AND expires_at > $3`,
			a.SessionHash, a.Subject, s.d.timeArg(s.now()))
		if err != nil {
			return err
		}
		if err := oneRow(res, "login session"); err != nil {
			return err
		}
		if err := s.lockMember(ctx, tx, a.ProjectID, a.Subject); err != nil {
			return err
		}
		active, err := queryAll(ctx, tx, "listing consents", scanConsent,
			`SELECT `+consentColumns+` FROM oauth_grants g
			  WHERE g.project_id = $1 AND g.subject = $2 AND g.client_id = $3 AND g.revoked_at IS NULL
			  ORDER BY g.created_at, g.id`+s.d.forShare(),
			a.ProjectID, a.Subject, a.Code.ClientID)
		if err != nil {
			return err
		}
		scopes, err := normalizeScopes(a.Scopes(slices.Clone(active)))
		if err != nil {
			return err
		}
		// A consent is never widened: the answer reuses one with exactly
		// these scopes, or records its own.
		if i := slices.IndexFunc(active, func(c Consent) bool { return slices.Equal(c.Scopes, scopes) }); i >= 0 {
			g = active[i]
		} else if g, err = s.insertConsent(ctx, tx, a.ProjectID, a.Subject, a.Code.ClientID, scopes); err != nil {
			return err
		}
		code := a.Code
		code.ConsentID, code.Scopes = g.ID, g.Scopes
		if err := validateCode(&code); err != nil {
			return err
		}
		return s.insertCode(ctx, tx, code)
	})
	if err != nil {
		return Consent{}, err
	}
	return g, nil
}
