package sso

import (
	"context"
	"slices"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/npugrade/npugrade/internal/domain"
)

// OIDC is an OpenID provider npugrade trusts (serve --oidc-issuer).
type OIDC struct {
	Issuer, ClientID, ClientSecret string
	// LoginClaim is the claim naming the user (preferred_username),
	// RolesClaim the claim listing roles or groups (groups), and
	// InstructorValue the entry of it that makes an instructor.
	LoginClaim, RolesClaim, InstructorValue string

	mu       sync.Mutex
	provider *oidc.Provider
}

// OIDCLogin signs browsers in through the provider: authorization code
// with PKCE, state and nonce (single use, in the database).
type OIDCLogin struct {
	OIDC   *OIDC
	States StateStore
	Users  Users
}

// discover reads the provider's configuration once it answers; a
// provider down at start is retried at the next sign-in.
func (o *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(context.WithoutCancel(ctx), boundedClient()), o.Issuer)
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "the OpenID provider %s cannot be read: %s", o.Issuer, reason(err))
	}
	o.provider = p
	return p, nil
}

func (l *OIDCLogin) config(p *oidc.Provider, redirectURI string) *oauth2.Config {
	return &oauth2.Config{ClientID: l.OIDC.ClientID, ClientSecret: l.OIDC.ClientSecret, RedirectURL: redirectURI,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email", l.OIDC.RolesClaim}}
}

// Begin keeps a fresh state and nonce and returns the authorization URL.
func (l *OIDCLogin) Begin(ctx context.Context, redirectURI, next string) (string, error) {
	p, err := l.OIDC.discover(ctx)
	if err != nil {
		return "", err
	}
	nonce, err := randomString()
	if err != nil {
		return "", err
	}
	pd := pending{Verifier: oauth2.GenerateVerifier(), Nonce: nonce, Next: next}
	state, err := putState(ctx, l.States, pd)
	if err != nil {
		return "", err
	}
	return l.config(p, redirectURI).AuthCodeURL(state, oauth2.S256ChallengeOption(pd.Verifier), oidc.Nonce(nonce)), nil
}

// Finish exchanges the code, verifies the id_token (issuer, audience,
// expiry, signature, nonce) and returns the linked user.
func (l *OIDCLogin) Finish(ctx context.Context, redirectURI, state, code string) (domain.User, string, error) {
	pd, err := takeState(ctx, l.States, state)
	if err != nil {
		return domain.User{}, "", err
	}
	p, err := l.OIDC.discover(ctx)
	if err != nil {
		return domain.User{}, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	ctx = oidc.ClientContext(ctx, boundedClient())
	tok, err := l.config(p, redirectURI).Exchange(ctx, code, oauth2.VerifierOption(pd.Verifier))
	if err != nil {
		if re, ok := err.(*oauth2.RetrieveError); ok && re.Response != nil && re.Response.StatusCode < 500 {
			return domain.User{}, "", domain.Errorf(domain.EUNAUTHORIZED, "the provider refused the sign-in code (%s)", re.Response.Status)
		}
		return domain.User{}, "", domain.Errorf(domain.EUNAVAILABLE, "the OpenID provider %s: exchanging the code: %s", l.OIDC.Issuer, reason(err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return domain.User{}, "", domain.Errorf(domain.EUNAUTHORIZED, "the provider sent no id_token")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: l.OIDC.ClientID}).Verify(ctx, raw)
	if err != nil {
		return domain.User{}, "", domain.Errorf(domain.EUNAUTHORIZED, "the id_token is not valid: %s", err)
	}
	if idt.Nonce != pd.Nonce {
		return domain.User{}, "", domain.Errorf(domain.EUNAUTHORIZED, "the id_token's nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return domain.User{}, "", domain.Errorf(domain.EUNAUTHORIZED, "the id_token's claims cannot be read: %s", err)
	}
	login, _ := claims[l.OIDC.LoginClaim].(string)
	if login == "" {
		return domain.User{}, "", domain.Errorf(domain.EUNAUTHORIZED, "the id_token has no %q claim", l.OIDC.LoginClaim)
	}
	u, err := l.Users.ExternalUser(ctx, idt.Issuer, idt.Subject, login, l.OIDC.role(claims))
	return u, pd.Next, err
}

// role is instructor when the roles claim (a list or one string) holds
// the instructor value.
func (o *OIDC) role(claims map[string]any) domain.Role {
	switch v := claims[o.RolesClaim].(type) {
	case string:
		if v == o.InstructorValue {
			return domain.RoleInstructor
		}
	case []any:
		if slices.ContainsFunc(v, func(x any) bool { s, _ := x.(string); return s == o.InstructorValue }) {
			return domain.RoleInstructor
		}
	}
	return domain.RoleLearner
}
