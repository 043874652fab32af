package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// newGrant records a grant of user code code (device code "dev-"+code).
func newGrant(t *testing.T, db *store.DB, code string) {
	t.Helper()
	_, err := db.CreateDeviceGrant(context.Background(), store.NewDeviceGrant{DeviceHash: auth.HashToken("dev-" + code),
		UserCode: code, ClientName: "npugrade.py on " + code, ClientAddr: "10.1.0.1", Interval: 5 * time.Second,
		TTL: 10 * time.Minute, PerAddr: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
}

func poll(t *testing.T, db *store.DB, code, want string) domain.DevicePoll {
	t.Helper()
	p, err := db.PollDeviceGrant(context.Background(), auth.HashToken("dev-"+code))
	if err != nil {
		t.Fatal(err)
	}
	if p.Outcome != want {
		t.Fatalf("poll of %s = %+v, want %s", code, p, want)
	}
	return p
}

// TestDeviceGrantLifecycle: a grant is pending until approved, a poll
// within the interval is slow_down (and lengthens it), the approved
// grant's learner token is issued to exactly one poll, a denied grant is
// access_denied, an undecided one expires, and a used or unknown code is
// invalid_grant. On both dialects.
func TestDeviceGrantLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		db.Clock = func() time.Time { return now }
		u, _, err := db.CreateUser(ctx, "lin", domain.RoleInstructor)
		if err != nil {
			t.Fatal(err)
		}
		newGrant(t, db, "BCDFGHJK")
		g, err := db.DeviceGrantByCode(ctx, "BCDFGHJK")
		if err != nil || g.Status != domain.DevicePending || g.ClientName != "npugrade.py on BCDFGHJK" {
			t.Fatalf("grant = %+v, %v", g, err)
		}
		poll(t, db, "BCDFGHJK", domain.PollPending)
		now = now.Add(time.Second)
		if p := poll(t, db, "BCDFGHJK", domain.PollSlowDown); p.Interval != 10*time.Second {
			t.Fatalf("slow_down interval %s, want 10s", p.Interval)
		}
		now = now.Add(6 * time.Second) // within the new interval
		poll(t, db, "BCDFGHJK", domain.PollSlowDown)
		now = now.Add(15 * time.Second)
		poll(t, db, "BCDFGHJK", domain.PollPending)

		if err := db.DecideDeviceGrant(ctx, "BCDFGHJK", u.ID, true); err != nil {
			t.Fatal(err)
		}
		if err := db.DecideDeviceGrant(ctx, "BCDFGHJK", u.ID, false); domain.ErrorCode(err) != domain.ECONFLICT {
			t.Fatalf("second decision: %v, want ECONFLICT", err)
		}
		p := poll(t, db, "BCDFGHJK", domain.PollIssued)
		if p.User.ID != u.ID || p.User.Role != domain.RoleLearner || p.Token == "" {
			t.Fatalf("issued %+v", p)
		}
		poll(t, db, "BCDFGHJK", domain.PollInvalid) // consumed: once only
		a, err := db.Authenticate(ctx, p.Token, "", 0)
		if err != nil || !a.Valid || a.User.Role != domain.RoleLearner || a.Scope != domain.ScopeLearner {
			t.Fatalf("issued token's check = %+v, %v", a, err)
		}
		toks, err := db.UserTokens(ctx, u.ID)
		if err != nil || len(toks) != 2 || toks[1].Label != "npugrade.py on BCDFGHJK" || toks[1].Scope != domain.ScopeLearner {
			t.Fatalf("tokens = %+v, %v", toks, err)
		}

		newGrant(t, db, "LMNPQRST")
		if err := db.DecideDeviceGrant(ctx, "LMNPQRST", u.ID, false); err != nil {
			t.Fatal(err)
		}
		poll(t, db, "LMNPQRST", domain.PollDenied)

		newGrant(t, db, "VWXZBCDF")
		now = now.Add(11 * time.Minute)
		poll(t, db, "VWXZBCDF", domain.PollExpired)
		if err := db.DecideDeviceGrant(ctx, "VWXZBCDF", u.ID, true); domain.ErrorCode(err) != domain.ECONFLICT {
			t.Fatalf("approving an expired grant: %v, want ECONFLICT", err)
		}
		poll(t, db, "NOSUCHCODE", domain.PollInvalid)
		if _, err := db.DeviceGrantByCode(ctx, "ZZZZZZZZ"); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Fatalf("unknown code: %v", err)
		}
		// A taken user code is ECONFLICT; an hour after expiry it is free.
		_, err = db.CreateDeviceGrant(ctx, store.NewDeviceGrant{DeviceHash: "x", UserCode: "VWXZBCDF", TTL: time.Minute, Interval: 5 * time.Second})
		if domain.ErrorCode(err) != domain.ECONFLICT {
			t.Fatalf("taken code: %v", err)
		}
		now = now.Add(2 * time.Hour)
		newGrant(t, db, "VWXZBCDF")
	})
}

// TestDeviceGrantRateLimit: an address gets PerAddr codes per window.
func TestDeviceGrantRateLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		g := store.NewDeviceGrant{ClientAddr: "10.9.0.1", Interval: 5 * time.Second, TTL: time.Minute, PerAddr: 2, Window: time.Minute}
		for i, code := range []string{"BBBBBBBB", "CCCCCCCC", "DDDDDDDD"} {
			g.UserCode, g.DeviceHash = code, code
			_, err := db.CreateDeviceGrant(ctx, g)
			if want := i == 2; (domain.ErrorCode(err) == domain.ERATELIMIT) != want {
				t.Fatalf("grant %d: %v", i, err)
			}
		}
		g.ClientAddr, g.UserCode, g.DeviceHash = "10.9.0.2", "FFFFFFFF", "FFFFFFFF"
		if _, err := db.CreateDeviceGrant(ctx, g); err != nil {
			t.Fatalf("another address: %v", err)
		}
	})
}

// TestScopedTokens: a learner-scoped token of staff acts as a learner; a
// runner gets none; a user revokes their own token alone (another's is
// ENOTFOUND), and on Postgres another server listening for changes
// refuses it at once.
func TestScopedTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			url := storetest.URL(t, d)
			db, other := storetest.OpenURL(t, url), storetest.OpenURL(t, url)
			lctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); other.ListenAuth(lctx, nil) }()
			defer func() { stop(); <-done }()
			admin, full, err := db.CreateUser(ctx, "root", domain.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			runner, _, err := db.CreateUser(ctx, "rn", domain.RoleRunner)
			if err != nil {
				t.Fatal(err)
			}
			learner, _, err := db.CreateUser(ctx, "li", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			scoped, id, err := db.CreateScopedToken(ctx, admin.ID, domain.ScopeLearner, "laptop")
			if err != nil || id == 0 {
				t.Fatal(id, err)
			}
			for _, c := range []struct {
				token string
				role  domain.Role
				scope string
			}{{full, domain.RoleAdmin, domain.ScopeFull}, {scoped, domain.RoleLearner, domain.ScopeLearner}} {
				a, err := other.Authenticate(ctx, c.token, "10.2.0.1", time.Minute)
				if err != nil || !a.Valid || a.User.Role != c.role || a.Scope != c.scope || a.User.ID != admin.ID {
					t.Fatalf("check = %+v, %v; want role %s", a, err, c.role)
				}
			}
			if _, _, err := db.CreateScopedToken(ctx, runner.ID, domain.ScopeLearner, ""); domain.ErrorCode(err) != domain.EINVALID {
				t.Fatalf("runner learner token: %v", err)
			}
			if _, _, err := db.CreateScopedToken(ctx, admin.ID, "root", ""); domain.ErrorCode(err) != domain.EINVALID {
				t.Fatalf("unknown scope: %v", err)
			}
			if _, _, err := db.CreateScopedToken(ctx, 9999, domain.ScopeLearner, ""); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Fatalf("unknown user: %v", err)
			}
			if err := db.RevokeUserToken(ctx, learner.ID, id); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Fatalf("revoking another's token: %v", err)
			}
			if a, _ := other.Authenticate(ctx, scoped, "10.2.0.1", time.Minute); !a.Valid {
				t.Fatal("another's failed revocation revoked it")
			}
			if err := db.RevokeUserToken(ctx, admin.ID, id); err != nil {
				t.Fatal(err)
			}
			// The other server forgets its kept check at the notification.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				a, err := other.Authenticate(ctx, scoped, "10.2.0.1", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if !a.Valid {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("a revoked token is still accepted by another server after 10 s")
				}
			}
			if a, _ := other.Authenticate(ctx, full, "10.2.0.1", time.Minute); !a.Valid {
				t.Fatal("revoking one token revoked the other")
			}
			if err := db.RevokeUserToken(ctx, admin.ID, id); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Fatalf("revoking twice: %v", err)
			}
			toks, err := db.UserTokens(ctx, admin.ID)
			if err != nil || len(toks) != 1 {
				t.Fatalf("tokens after revoke = %+v, %v", toks, err)
			}
		})
	}
}
