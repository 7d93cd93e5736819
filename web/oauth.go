package web

// Consent is the data of the OAuth consent page: which client asks, for
// which scopes, on which of the user's projects. The template shows every
// name, subject and host through Visible.
type Consent struct {
	ClientName string
	ClientID   string
	// RedirectHost is where the browser returns to, so the user can tell
	// a client that claims a familiar name from one that is it.
	RedirectHost string
	Subject      string
	Projects     []ConsentProject
	Scopes       []ConsentScope
	// CSRFToken is bound to the browser's login session.
	CSRFToken string
}

// ConsentProject is one project the user may grant access to.
type ConsentProject struct {
	ID      string
	Name    string
	Checked bool
	// Note says exactly what the token will carry on the project: the
	// scopes this client held there before, those asked now, and both.
	Note string
}

// ConsentScope is one requested scope.
type ConsentScope struct {
	Name        string
	Description string
	// NewFor names the projects where no existing consent of this client has
	// the scope; empty when every project's consent has it.
	NewFor string
}

// OAuthError is an error page of the OAuth flow, shown instead of sending
// the browser back to the client.
type OAuthError struct {
	Title   string
	Message string
	// Code is the OAuth error code (RFC 6749 §4.1.2.1, "invalid_request"),
	// shown so the user can tell the client's developers what went wrong;
	// empty for errors of the sign-in itself.
	Code string
}
