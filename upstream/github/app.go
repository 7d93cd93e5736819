// Package github is the gateway's client of the GitHub REST API: GitHub App
// authentication (an RS256 app JWT exchanged for short-lived installation
// tokens, cached per installation), the repository Contents route the
// documents toolset reads (docs/architecture.md#documents-contract), and the
// branch route that catalog dispatch resolves tracking sources with
// (docs/architecture.md#instruction-catalog-contract).
//
// Every request goes through the strict upstream client, bound to the one
// configured GitHub API origin: path segments are escaped one by one,
// redirects and compressed bodies are refused, and every body is read
// through a bound. The MCP caller's credential never reaches this package;
// the only credentials sent to GitHub are the app JWT (to the token route)
// and installation tokens (to the Contents and branch routes). Neither is
// ever logged or put into an error.
package github

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// APIVersion is the REST API version every request pins.
const APIVersion = "2022-11-28"

// App is a GitHub App's identity: its ID and the private key that signs
// app JWTs. It is safe for concurrent use.
type App struct {
	id  int64
	key *rsa.PrivateKey
	now func() time.Time
}

// NewApp returns an App. The key must be an RSA key of at least 2048 bits,
// as GitHub issues.
func NewApp(id int64, key *rsa.PrivateKey) (*App, error) {
	if id <= 0 {
		return nil, errors.New("github app: the App ID must be a positive integer")
	}
	if key == nil || key.N.BitLen() < 2048 {
		return nil, errors.New("github app: the private key must be an RSA key of at least 2048 bits")
	}
	return &App{id: id, key: key, now: time.Now}, nil
}

// LoadApp reads the App's PEM private key (PKCS #1 or PKCS #8) from a
// protected file: mode 0600 or 0400, owned by the user the gateway runs as
// (readKeyFile). Its errors never quote the file's content.
func LoadApp(id int64, keyFile string) (*App, error) {
	pem, err := readKeyFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("github app private key: %w", err)
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(pem)
	if err != nil {
		return nil, errors.New("github app private key: not a PEM-encoded RSA private key")
	}
	return NewApp(id, key)
}

// ID is the App ID.
func (a *App) ID() int64 { return a.id }

// Lifetimes of an app JWT. GitHub refuses an exp more than 10 minutes
// ahead; iat is set 60 s in the past to absorb clock drift, as GitHub
// recommends, and exp a minute short of the limit for the same reason.
const (
	jwtBackdate = 60 * time.Second
	jwtLifetime = 9 * time.Minute
)

// JWT returns a fresh app JWT: RS256, iss the App ID, iat 60 s in the past,
// exp 9 minutes ahead. It is only ever sent to the installation token route.
func (a *App) JWT() (string, error) {
	now := a.now()
	claims := jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(a.id, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-jwtBackdate)),
		ExpiresAt: jwt.NewNumericDate(now.Add(jwtLifetime)),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("github app: signing the app JWT: %w", err)
	}
	return s, nil
}
