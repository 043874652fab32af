package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestAuthKeptChecks: on Postgres a server listening for changes to
// token checks (ListenAuth) keeps valid tokens' checks and skips the
// lookup, and forgets them at every change made by anyone: a token
// revoked or a user's role changed by another process (the CLI, another
// server), an address's failures counted (that address's checks alone),
// its own revocations at once.
// Without the listener nothing is kept (SQLite: never).
func TestAuthKeptChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			url := storetest.URL(t, d)
			srv, other := storetest.OpenURL(t, url), storetest.OpenURL(t, url)
			u, token, err := other.CreateUser(ctx, "learner-a", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			lctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); srv.ListenAuth(lctx, nil) }()
			defer func() { stop(); <-done }()
			check := func(token, addr string) store.TokenCheck {
				t.Helper()
				a, err := srv.Authenticate(ctx, token, addr, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			if d == "sqlite" {
				check(token, "10.0.0.1")
				if n, _ := srv.AuthKept(); n != 0 {
					t.Fatalf("SQLite kept %d checks", n)
				}
				return
			}
			// kept waits for the listener to be fresh and a check of token to be kept.
			kept := func() {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if a := check(token, "10.0.0.1"); !a.Valid || a.User.ID != u.ID {
						t.Fatalf("check = %+v", a)
					}
					if _, fresh := srv.AuthKept(); fresh && srv.AuthKeptAddrs()["10.0.0.1"] {
						return
					}
					if time.Now().After(deadline) {
						t.Fatal("no check kept within 10 s")
					}
				}
			}
			// forgotten waits (10 s at most) for the notification of another
			// process's change to reach srv.
			forgotten := func(what string) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if n, _ := srv.AuthKept(); n == 0 {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s did not forget the kept checks within 10 s", what)
					}
				}
			}
			kept()
			// A kept check is served without the lookup: a change that
			// notifies nobody (the trigger off, which nothing but this test
			// does) goes unseen.
			for _, q := range []string{"ALTER TABLE users DISABLE TRIGGER users_auth_notify",
				"UPDATE users SET full_name = 'Unseen' WHERE name = 'learner-a'",
				"ALTER TABLE users ENABLE TRIGGER users_auth_notify"} {
				if err := other.RawExec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if a := check(token, "10.0.0.1"); a.User.FullName != "" {
				t.Fatalf("kept check read the database: %+v", a)
			}
			// Another process's roster import changes the role.
			if _, err := other.ImportRoster(ctx, domain.User{Name: "admin"}, []domain.RosterEntry{{Name: "learner-a", Role: domain.RoleInstructor, FullName: "A"}}); err != nil {
				t.Fatal(err)
			}
			forgotten("a roster import")
			if a := check(token, "10.0.0.1"); a.User.Role != domain.RoleInstructor || a.User.FullName != "A" {
				t.Fatalf("after the roster import: %+v", a)
			}
			// Failures of the address counted by another server.
			kept()
			if _, _, err := other.RecordAuthFailure(ctx, "10.0.0.1", time.Minute); err != nil {
				t.Fatal(err)
			}
			forgotten("a failure counted")
			if a := check(token, "10.0.0.1"); !a.Valid || a.Failures != 1 {
				t.Fatalf("after a failure: %+v", a)
			}
			// Another address's failures forget that address's checks
			// alone (migration 00022): a guesser does not make this
			// server look every token up again.
			kept()
			check(token, "10.0.0.2")
			if n, _ := srv.AuthKept(); n != 2 {
				t.Fatalf("%d checks kept, want 2 (two addresses)", n)
			}
			if _, _, err := other.RecordAuthFailure(ctx, "10.0.0.2", time.Minute); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); srv.AuthKeptAddrs()["10.0.0.2"]; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("a failure of 10.0.0.2 did not forget its check within 10 s")
				}
			}
			if addrs := srv.AuthKeptAddrs(); !addrs["10.0.0.1"] || len(addrs) != 1 {
				t.Fatalf("after 10.0.0.2's failure the kept checks are of %v, want 10.0.0.1's alone", addrs)
			}
			if a := check(token, "10.0.0.2"); !a.Valid || a.Failures != 1 {
				t.Fatalf("10.0.0.2 after its failure: %+v", a)
			}
			// A revocation by another process (npugrade user, another server).
			kept()
			if err := other.RevokeTokens(ctx, u.ID); err != nil {
				t.Fatal(err)
			}
			forgotten("a revocation")
			if a := check(token, "10.0.0.1"); a.Valid {
				t.Fatalf("revoked token accepted: %+v", a)
			}
			// This server's own revocation counts before its notification.
			token2, err := srv.CreateToken(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			token = token2
			kept()
			toks, err := srv.Tokens(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range toks {
				if tk.RevokedAt == nil {
					if err := srv.RevokeToken(ctx, tk.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			if a := check(token, "10.0.0.1"); a.Valid {
				t.Fatalf("own revocation: token accepted %+v", a)
			}
			// Without the listener nothing is kept or served.
			stop()
			<-done
			token3, err := srv.CreateToken(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			check(token3, "10.0.0.1")
			if n, fresh := srv.AuthKept(); n != 0 || fresh {
				t.Fatalf("after the listener stopped: %d kept, fresh %v", n, fresh)
			}
		})
	}
}
