package sso

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// Users is what signing in from outside reads and writes of the store.
type Users interface {
	ExternalUser(ctx context.Context, issuer, subject, login string, role domain.Role) (domain.User, error)
	Audit(ctx context.Context, actor domain.User, action, subject, detail string) error
}

// TokenStore mints the learner token a hub token is exchanged for.
type TokenStore interface {
	Users
	CreateScopedToken(ctx context.Context, userID int64, scope, label string) (token string, id int64, err error)
}

// Throttle refuses addresses that keep failing (accounts.Guard).
type Throttle interface {
	Check(ctx context.Context, addr string) error
	Failed(ctx context.Context, addr, path string)
}

// Exchange trades a learner's JupyterHub API token (the single-user
// server's JUPYTERHUB_API_TOKEN) for an npugrade learner token, so the
// notebook client needs no pasted token.
type Exchange struct {
	Hub      *Hub
	DB       TokenStore
	Throttle Throttle
	Log      *slog.Logger
}

// Minted is an exchanged token.
type Minted struct {
	Token string
	Scope string
	User  domain.User
}

// ExchangePath is the route Exchange serves (counted in the throttle).
const ExchangePath = "/api/v1/auth/jupyterhub"

// Token checks hubToken at the hub and mints a learner-scoped token for
// its user. A refused hub token counts against addr.
func (e *Exchange) Token(ctx context.Context, addr, hubToken string) (Minted, error) {
	if err := e.Throttle.Check(ctx, addr); err != nil {
		return Minted{}, err
	}
	hubToken = strings.TrimSpace(hubToken)
	if hubToken == "" {
		e.Throttle.Failed(ctx, addr, ExchangePath)
		return Minted{}, domain.Errorf(domain.EUNAUTHORIZED, "a JupyterHub API token is required")
	}
	hu, err := e.Hub.User(ctx, "token "+hubToken)
	if err != nil {
		if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
			e.Throttle.Failed(ctx, addr, ExchangePath)
			e.audit(ctx, domain.User{Name: "anonymous"}, domain.AuditLoginFailed, "", "jupyterhub token refused from "+addr)
		}
		return Minted{}, err
	}
	u, err := e.DB.ExternalUser(ctx, e.Hub.Issuer(), hu.Name, hu.Name, e.Hub.Role(hu))
	if err != nil {
		e.audit(ctx, domain.User{Name: "anonymous"}, domain.AuditLoginFailed, hu.Name, "jupyterhub token: "+domain.ErrorMessage(err))
		return Minted{}, err
	}
	tok, _, err := e.DB.CreateScopedToken(ctx, u.ID, "learner", "jupyterhub")
	if err != nil {
		return Minted{}, fmt.Errorf("token for hub user %q: %w", hu.Name, err)
	}
	e.audit(ctx, u, domain.AuditLogin, u.Name, "jupyterhub token exchange from "+addr)
	return Minted{Token: tok, Scope: "learner", User: u}, nil
}

func (e *Exchange) audit(ctx context.Context, actor domain.User, action, subject, detail string) {
	if err := e.DB.Audit(ctx, actor, action, subject, detail); err != nil && e.Log != nil {
		e.Log.Warn("audit sign-in", "action", action, "err", err)
	}
}
