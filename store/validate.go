package store

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on stored text. They are generous: their job is to keep garbage and
// unbounded input out, not to encode upstream policy.
const (
	maxPathBytes    = 4096
	maxBranchBytes  = 255
	maxNameBytes    = 200
	maxSubjectBytes = 1024
	maxScopeBytes   = 128
	maxURIBytes     = 2048
	// A client's redirect URIs, which anyone who can register stores: a
	// few, each short (the registration endpoint's own bounds).
	maxRedirectURIs     = 5
	maxRedirectURIBytes = 512
)

// invalid returns an ErrInvalid naming the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// quote renders an input for an error message, cut to a readable length.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// ValidateCommitSHA checks that sha is a full commit ID: exactly 40 lowercase
// hexadecimal characters. Abbreviations, uppercase and SHA-256 object IDs are
// refused: a pinned source names one immutable GitHub commit.
func ValidateCommitSHA(sha string) error {
	if len(sha) != 40 {
		return invalid("commit_sha", "%s: want 40 lowercase hex characters, got %d bytes", quote(sha), len(sha))
	}
	for i := 0; i < len(sha); i++ {
		c := sha[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return invalid("commit_sha", "%s: want 40 lowercase hex characters", quote(sha))
		}
	}
	return nil
}

// ValidateDocumentPath checks a repository path by the rules of
// docs/architecture.md#documents-contract:
// relative, '/'-separated, valid UTF-8, no empty, "." or ".." segment (so no
// leading or trailing '/', and no "//"), no NUL and no backslash. On top of
// them it refuses what git allows in a file name but no document source
// should carry: control characters (CR and LF would split the admin
// CLI's text output and the log line of an operator's paste; ESC starts
// terminal escape sequences) and the Unicode bidirectional controls that
// make a path display as another ("Trojan Source").
func ValidateDocumentPath(path string) error {
	switch {
	case path == "":
		return invalid("path", "empty")
	case len(path) > maxPathBytes:
		return invalid("path", "longer than %d bytes", maxPathBytes)
	case !utf8.ValidString(path):
		return invalid("path", "not valid UTF-8")
	case strings.ContainsRune(path, 0):
		return invalid("path", "%s: contains NUL", quote(path))
	case strings.ContainsRune(path, '\\'):
		return invalid("path", "%s: contains a backslash", quote(path))
	case strings.HasPrefix(path, "/"):
		return invalid("path", "%s: must be relative (no leading /)", quote(path))
	case strings.IndexFunc(path, unicode.IsControl) >= 0:
		return invalid("path", "%s: contains a control character", quote(path))
	case strings.IndexFunc(path, isBidiControl) >= 0:
		return invalid("path", "%s: contains a Unicode bidirectional control", quote(path))
	}
	for seg := range strings.SplitSeq(path, "/") {
		switch seg {
		case "":
			return invalid("path", "%s: empty segment", quote(path))
		case ".", "..":
			return invalid("path", "%s: %q segment", quote(path), seg)
		}
	}
	return nil
}

// isBidiControl reports the Unicode bidirectional formatting characters:
// the embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069,
// and the marks U+200E, U+200F and U+061C.
func isBidiControl(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

// ValidateBranch checks that name is a branch name that
// `git check-ref-format --branch` accepts, given as a short name: no
// component starting with '.' or ending in ".lock", no "..", no control
// characters, space, '~', '^', ':', '?', '*', '[' or '\', no leading,
// trailing or doubled '/', no trailing '.', no "@{", not "@". On top of git's
// rules it refuses what a tracking source must not name: fully qualified refs
// ("refs/…", so no "refs/tags/…"), "HEAD", names starting with '-', invalid
// UTF-8, and names over 255 bytes.
func ValidateBranch(name string) error {
	switch {
	case name == "":
		return invalid("tracking_ref", "empty")
	case len(name) > maxBranchBytes:
		return invalid("tracking_ref", "longer than %d bytes", maxBranchBytes)
	case !utf8.ValidString(name):
		return invalid("tracking_ref", "not valid UTF-8")
	case strings.HasPrefix(name, "refs/"):
		return invalid("tracking_ref", "%s: give a branch name, not a full ref (tags are not accepted)", quote(name))
	case name == "HEAD" || name == "@":
		return invalid("tracking_ref", "%s: not a branch name", quote(name))
	case strings.HasPrefix(name, "-"):
		return invalid("tracking_ref", "%s: starts with '-'", quote(name))
	case strings.Contains(name, ".."):
		return invalid("tracking_ref", "%s: contains \"..\"", quote(name))
	case strings.Contains(name, "@{"):
		return invalid("tracking_ref", "%s: contains \"@{\"", quote(name))
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return invalid("tracking_ref", "%s: leading, trailing or doubled '/'", quote(name))
	case strings.HasSuffix(name, "."):
		return invalid("tracking_ref", "%s: ends with '.'", quote(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return invalid("tracking_ref", "%s: contains %q", quote(name), rune(c))
		}
	}
	for comp := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return invalid("tracking_ref", "%s: component %s starts with '.' or ends with \".lock\"", quote(name), quote(comp))
		}
	}
	return nil
}

// ValidateRole checks a document source role: a lowercase word of letters,
// digits, '-' and '_' starting with a letter, at most 64 bytes.
func ValidateRole(role string) error {
	if role == "" || len(role) > 64 {
		return invalid("role", "want 1 to 64 bytes")
	}
	for i := 0; i < len(role); i++ {
		c := role[i]
		ok := c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '_')
		if !ok {
			return invalid("role", "%s: want a lowercase letter, then letters, digits, '-' or '_'", quote(role))
		}
	}
	return nil
}

// ValidateGitHubOwner checks a GitHub user or organization login: ASCII
// letters, digits, '-' and '_' (managed users), starting with a letter or
// digit, at most 100 bytes.
func ValidateGitHubOwner(owner string) error {
	if owner == "" || len(owner) > 100 {
		return invalid("owner", "want 1 to 100 bytes")
	}
	for i := 0; i < len(owner); i++ {
		c := owner[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_') {
			return invalid("owner", "%s: want ASCII letters, digits, '-' or '_', starting with a letter or digit", quote(owner))
		}
	}
	return nil
}

// ValidateGitHubRepositoryName checks a GitHub repository name: ASCII
// letters, digits, '.', '-' and '_', at most 100 bytes, not "." or "..".
func ValidateGitHubRepositoryName(name string) error {
	if name == "" || len(name) > 100 {
		return invalid("repository", "want 1 to 100 bytes")
	}
	if name == "." || name == ".." {
		return invalid("repository", "%s is not a repository name", quote(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return invalid("repository", "%s: want ASCII letters, digits, '.', '-' or '_'", quote(name))
		}
	}
	return nil
}

// validateText checks a human-readable or opaque identifier: non-empty,
// bounded, valid UTF-8, no control characters.
func validateText(field, s string, maxBytes int) error {
	switch {
	case s == "":
		return invalid(field, "empty")
	case len(s) > maxBytes:
		return invalid(field, "longer than %d bytes", maxBytes)
	case !utf8.ValidString(s):
		return invalid(field, "not valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return invalid(field, "%s: contains a control character", quote(s))
	}
	return nil
}

// validateName checks an account, project or client name: text without
// leading or trailing space.
func validateName(field, s string) error {
	if err := validateText(field, s, maxNameBytes); err != nil {
		return err
	}
	if strings.TrimSpace(s) != s {
		return invalid(field, "%s: leading or trailing space", quote(s))
	}
	return nil
}

// normalizeScopes checks OAuth scope tokens (RFC 6749 §3.3: printable ASCII
// but space, '"' and '\') and returns them as a sorted set; at least one.
func normalizeScopes(scopes []string) ([]string, error) {
	if len(scopes) == 0 {
		return nil, invalid("scopes", "at least one scope is required")
	}
	for _, s := range scopes {
		if s == "" || len(s) > maxScopeBytes {
			return nil, invalid("scopes", "each scope needs 1 to %d bytes", maxScopeBytes)
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return nil, invalid("scopes", "%s: not a scope token", quote(s))
			}
		}
	}
	return sortedSet(scopes), nil
}

// normalizePermissions checks legacy token permissions and returns them as a
// sorted set: a non-empty subset of {memory, task}.
func normalizePermissions(perms []string) ([]string, error) {
	if len(perms) == 0 {
		return nil, invalid("permissions", "at least one of memory, task is required")
	}
	for _, p := range perms {
		if p != PermissionMemory && p != PermissionTask {
			return nil, invalid("permissions", "%s: only memory and task exist", quote(p))
		}
	}
	return sortedSet(perms), nil
}

// validateRedirectURIs checks what the store can hold: 1 to 5 absolute URIs
// of at most 512 bytes
// without fragments (RFC 6749 §3.1.2). Which schemes and hosts are acceptable
// is the registration endpoint's policy.
func validateRedirectURIs(uris []string) error {
	if len(uris) == 0 || len(uris) > maxRedirectURIs {
		return invalid("redirect_uris", "want 1 to %d URIs", maxRedirectURIs)
	}
	for _, s := range uris {
		if err := validateText("redirect_uris", s, maxRedirectURIBytes); err != nil {
			return err
		}
		u, err := url.Parse(s)
		if err != nil || !u.IsAbs() {
			return invalid("redirect_uris", "%s: not an absolute URI", quote(s))
		}
		if u.Fragment != "" || strings.Contains(s, "#") {
			return invalid("redirect_uris", "%s: has a fragment", quote(s))
		}
	}
	return nil
}

// sortedSet returns a sorted copy of ss without duplicates.
func sortedSet(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}
