package forgejoemu

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// AddUser creates a user (a bot is a user too). A login that exists, in any
// case, is ErrExists.
func (e *Emulator) AddUser(login string) (*User, error) {
	if !validName(login) {
		return nil, fmt.Errorf("%w: user name %q", ErrInvalid, login)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.userLocked(login) != nil {
		return nil, fmt.Errorf("%w: user %s", ErrExists, login)
	}
	return e.addUserLocked(login), nil
}

// addUserLocked creates a user whose name is valid and free. Callers hold e.mu.
func (e *Emulator) addUserLocked(login string) *User {
	u := &User{
		ID:      e.st.nextUser,
		Login:   login,
		Email:   strings.ToLower(login) + "@example.invalid",
		created: e.nowLocked(),
	}
	e.st.nextUser++
	e.st.users[strings.ToLower(login)] = u
	e.st.usersByID[u.ID] = u
	return u
}

// ensureUserLocked returns the user, creating it if absent. Callers hold e.mu.
func (e *Emulator) ensureUserLocked(login string) (*User, error) {
	if u := e.userLocked(login); u != nil {
		return u, nil
	}
	if !validName(login) {
		return nil, fmt.Errorf("%w: user name %q", ErrInvalid, login)
	}
	return e.addUserLocked(login), nil
}

// IssueToken creates a personal access token for the user (created if absent)
// and returns its secret, 40 lowercase hex characters like Forgejo's.
//
// Scopes are Forgejo's: "all", "public-only", and "read:<category>" or
// "write:<category>" for activitypub, admin, misc, notification,
// organization, package, issue, repository and user; write implies read.
// No scopes means "all" (what Forgejo migrated pre-scope tokens to). An
// unknown scope is kept and makes every scoped route answer 403, as Forgejo
// does when a stored scope does not parse. An invalid login yields "".
func (e *Emulator) IssueToken(login string, scopes ...string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	u, err := e.ensureUserLocked(login)
	if err != nil {
		return ""
	}
	scope := strings.Join(scopes, ",")
	if len(scopes) == 0 {
		scope = scopeAll
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "" // crypto/rand does not fail on supported platforms
	}
	secret := hex.EncodeToString(b[:])
	e.st.tokens[secret] = &token{user: u, scope: scope}
	return secret
}

// RevokeToken deletes a token; later requests with it get 401, as in Forgejo.
func (e *Emulator) RevokeToken(secret string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.st.tokens, secret)
}
