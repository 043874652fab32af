package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// Authenticate reads the token's user and the address's failures in one
// statement; it records a token's use at most once a minute, and a
// revocation counts on the next request.
func TestAuthenticate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		db.Clock = func() time.Time { return clock }
		u, token, err := db.CreateUser(ctx, "runner-a", domain.RoleRunner)
		if err != nil {
			t.Fatal(err)
		}
		a, err := db.Authenticate(ctx, token, "10.0.0.1", time.Minute)
		if err != nil || !a.Valid || a.User.ID != u.ID || a.User.Role != domain.RoleRunner || a.User.Name != "runner-a" ||
			!a.User.CreatedAt.Equal(clock) || a.Failures != 0 {
			t.Fatalf("Authenticate = %+v, %v", a, err)
		}
		lastUsed := func() time.Time {
			toks, err := db.Tokens(ctx)
			if err != nil || len(toks) != 1 || toks[0].LastUsedAt == nil {
				t.Fatalf("tokens = %+v, %v", toks, err)
			}
			return toks[0].LastUsedAt.UTC()
		}
		if got := lastUsed(); !got.Equal(clock) {
			t.Fatalf("last_used_at = %v, want %v", got, clock)
		}
		// Within the minute no write; after it one.
		first := clock
		clock = clock.Add(30 * time.Second)
		if _, err := db.Authenticate(ctx, token, "10.0.0.1", time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(); !got.Equal(first) {
			t.Fatalf("last_used_at rewritten within a minute: %v", got)
		}
		clock = clock.Add(time.Minute)
		if _, err := db.Authenticate(ctx, token, "10.0.0.1", time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(); !got.Equal(clock) {
			t.Fatalf("last_used_at = %v, want %v", got, clock)
		}
		// Failures of the address come with the lookup, within their window.
		for range 3 {
			if _, _, err := db.RecordAuthFailure(ctx, "10.0.0.9", time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		a, err = db.Authenticate(ctx, "npg_guess", "10.0.0.9", time.Minute)
		if err != nil || a.Valid || a.Failures != 3 || !a.WindowStart.Equal(clock) {
			t.Fatalf("Authenticate of a guess = %+v, %v", a, err)
		}
		clock = clock.Add(2 * time.Minute)
		if a, err = db.Authenticate(ctx, token, "10.0.0.9", time.Minute); err != nil || !a.Valid || a.Failures != 0 {
			t.Fatalf("after the window = %+v, %v", a, err)
		}
		if err := db.RevokeTokens(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if a, err = db.Authenticate(ctx, token, "10.0.0.1", time.Minute); err != nil || a.Valid {
			t.Fatalf("revoked token = %+v, %v", a, err)
		}
		if a, err = db.Authenticate(ctx, "", "", 0); err != nil || a.Valid {
			t.Fatalf("no token = %+v, %v", a, err)
		}
	})
}
