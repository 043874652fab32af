package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestExternalUserLinks: an outside identity creates its user once and
// finds it again by issuer and subject whatever login it sends later; a
// roster user with no link is adopted; a login linked to another
// identity is a conflict; admin and runner accounts are never matched.
func TestExternalUserLinks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const hub = "jupyterhub:http://hub"
		u, err := db.ExternalUser(ctx, hub, "ada", "ada", domain.RoleLearner)
		if err != nil || u.Name != "ada" || u.Role != domain.RoleLearner {
			t.Fatalf("first sign-in: %+v %v", u, err)
		}
		again, err := db.ExternalUser(ctx, hub, "ada", "ada-renamed", domain.RoleInstructor)
		if err != nil || again.ID != u.ID || again.Role != domain.RoleLearner {
			t.Fatalf("same identity, new login: %+v %v (want user %d, role kept)", again, err, u.ID)
		}
		if _, err := db.UserByName(ctx, "ada-renamed"); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Fatalf("a renamed login made a second user: %v", err)
		}
		// Another identity (another provider) naming ada is refused.
		if _, err := db.ExternalUser(ctx, "https://idp", "sub-1", "ada", domain.RoleLearner); domain.ErrorCode(err) != domain.ECONFLICT {
			t.Fatalf("login of a user linked elsewhere: %v, want conflict", err)
		}
		// A roster user (no link yet) is adopted, role kept.
		bob, _, _ := db.CreateUser(ctx, "bob", domain.RoleInstructor)
		got, err := db.ExternalUser(ctx, "https://idp", "sub-bob", "bob", domain.RoleLearner)
		if err != nil || got.ID != bob.ID || got.Role != domain.RoleInstructor {
			t.Fatalf("roster user: %+v %v", got, err)
		}
		for _, r := range []domain.Role{domain.RoleAdmin, domain.RoleRunner} {
			acct, _, _ := db.CreateUser(ctx, "acct-"+string(r), r)
			if _, err := db.ExternalUser(ctx, hub, "s-"+string(r), acct.Name, domain.RoleLearner); domain.ErrorCode(err) != domain.EFORBIDDEN {
				t.Fatalf("%s account matched: %v", r, err)
			}
		}
		if _, err := db.ExternalUser(ctx, hub, "x", "x", domain.RoleAdmin); domain.ErrorCode(err) != domain.EINVALID {
			t.Fatalf("admin role from outside: %v", err)
		}
		// Revocation locks the user out of outside sign-ins too.
		carl, _ := db.ExternalUser(ctx, hub, "carl", "carl", domain.RoleLearner)
		if err := db.RevokeTokens(ctx, carl.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExternalUser(ctx, hub, "carl", "carl", domain.RoleLearner); domain.ErrorCode(err) != domain.EFORBIDDEN {
			t.Fatalf("revoked user signed in from outside: %v", err)
		}
		tok, id, err := db.CreateScopedToken(ctx, u.ID, "learner", "jupyterhub")
		if err != nil || id == 0 {
			t.Fatalf("scoped token: %v", err)
		}
		if who, err := db.UserByToken(ctx, tok); err != nil || who.ID != u.ID {
			t.Fatalf("scoped token names %+v %v", who, err)
		}
	})
}

// TestLoginStatesSingleUse: a sign-in state is read back once, with its
// data; a second take, an unknown state and an expired one are
// EUNAUTHORIZED.
func TestLoginStatesSingleUse(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.PutLoginState(ctx, "st-1", `{"v":"x"}`, time.Minute); err != nil {
			t.Fatal(err)
		}
		if d, err := db.TakeLoginState(ctx, "st-1"); err != nil || d != `{"v":"x"}` {
			t.Fatalf("take: %q %v", d, err)
		}
		if _, err := db.TakeLoginState(ctx, "st-1"); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
			t.Fatalf("second take: %v", err)
		}
		if _, err := db.TakeLoginState(ctx, "never"); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
			t.Fatalf("unknown: %v", err)
		}
		if err := db.PutLoginState(ctx, "st-2", "{}", -time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := db.TakeLoginState(ctx, "st-2"); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
			t.Fatalf("expired: %v", err)
		}
	})
}
