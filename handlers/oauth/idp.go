package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// IdentityProviderConfig names the OpenID Connect provider users log in at
// and the gateway's registration there.
type IdentityProviderConfig struct {
	// Issuer is the provider's issuer URL; its discovery document is read
	// from Issuer + "/.well-known/openid-configuration".
	Issuer string
	// ClientID and ClientSecret are the gateway's client at the provider;
	// an empty secret makes the gateway a public client there (PKCE only).
	ClientID     string
	ClientSecret string
	// Scopes requested at the provider; must include "openid".
	Scopes []string
	// RedirectURL is the gateway's /oauth/callback, registered at the
	// provider.
	RedirectURL string
	// HTTPClient talks to the provider; nil means a client with a 15 s
	// timeout that follows no redirects.
	HTTPClient *http.Client
}

// IdentityProvider logs users in at the OpenID Connect provider with the
// authorization code flow (with PKCE and a nonce), and verifies the ID
// token the provider returns: signature against the provider's keys,
// issuer, audience (the gateway's client ID), expiry, and nonce. The
// verified subject is the user's identity for project membership.
type IdentityProvider struct {
	cfg    IdentityProviderConfig
	client *http.Client

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// NewIdentityProvider returns a provider client. Discovery happens on first
// use (and is retried until it succeeds), so the gateway starts even while
// the provider is unreachable.
func NewIdentityProvider(cfg IdentityProviderConfig) *IdentityProvider {
	c := cfg.HTTPClient
	if c == nil {
		c = &http.Client{
			Timeout: 15 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("redirects from the identity provider are not followed")
			},
		}
	}
	return &IdentityProvider{cfg: cfg, client: c}
}

// discover reads the provider's discovery document once.
func (p *IdentityProvider) discover(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.oauth != nil {
		return p.oauth, p.verifier, nil
	}
	// The key set keeps the context it was made with for its later fetches,
	// so it must not be this request's (which ends with the request).
	dctx := oidc.ClientContext(context.WithoutCancel(ctx), p.client)
	prov, err := oidc.NewProvider(dctx, p.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("identity provider discovery (oidc.issuer %s): %w", p.cfg.Issuer, err)
	}
	p.oauth = &oauth2.Config{
		ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
		Endpoint: prov.Endpoint(), RedirectURL: p.cfg.RedirectURL, Scopes: p.cfg.Scopes,
	}
	p.verifier = prov.Verifier(&oidc.Config{ClientID: p.cfg.ClientID})
	return p.oauth, p.verifier, nil
}

// AuthCodeURL is where the browser goes to log in.
func (p *IdentityProvider) AuthCodeURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	cfg, _, err := p.discover(ctx)
	if err != nil {
		return "", err
	}
	return cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Exchange redeems the provider's code and returns the verified subject.
func (p *IdentityProvider) Exchange(ctx context.Context, code, verifier, nonce string) (string, error) {
	cfg, ver, err := p.discover(ctx)
	if err != nil {
		return "", err
	}
	ctx = oidc.ClientContext(ctx, p.client)
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return "", fmt.Errorf("exchanging the identity provider's code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return "", errors.New("the identity provider returned no id_token (is \"openid\" among oidc.scopes?)")
	}
	idt, err := ver.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("verifying the ID token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return "", errors.New("verifying the ID token: nonce mismatch")
	}
	if idt.Subject == "" {
		return "", errors.New("verifying the ID token: no subject")
	}
	return idt.Subject, nil
}
