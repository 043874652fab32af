package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestLTIRegistrationKeysAndNonces: a platform is registered once per
// (issuer, client id) and found by either; a rotation retires the
// signing key, which stays listed while retained; a nonce is taken once.
func TestLTIRegistrationKeysAndNonces(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		p := domain.LTIPlatform{Name: "moodle", Issuer: "https://moodle.example.edu", ClientID: "c1", DeploymentIDs: []string{"1", "2"},
			AuthLoginURL: "https://moodle.example.edu/mod/lti/auth.php", TokenURL: "https://moodle.example.edu/mod/lti/token.php",
			JWKSURL: "https://moodle.example.edu/mod/lti/certs.php"}
		got, err := db.AddLTIPlatform(ctx, p)
		if err != nil || got.ID == 0 || len(got.DeploymentIDs) != 2 {
			t.Fatalf("add: %+v %v", got, err)
		}
		if _, err := db.AddLTIPlatform(ctx, p); domain.ErrorCode(err) != domain.ECONFLICT {
			t.Errorf("second registration: %v, want conflict", err)
		}
		if f, err := db.LTIPlatformByIssuer(ctx, p.Issuer, ""); err != nil || f.ID != got.ID {
			t.Errorf("by issuer alone: %+v %v", f, err)
		}
		p.ClientID = "c2"
		if _, err := db.AddLTIPlatform(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := db.LTIPlatformByIssuer(ctx, p.Issuer, ""); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("two client ids, none named: %v, want invalid", err)
		}
		if _, err := db.LTIPlatformByIssuer(ctx, "https://other", "c1"); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Errorf("unknown issuer: %v", err)
		}

		now := time.Now()
		db.Clock = func() time.Time { return now }
		if err := db.RotateLTIKey(ctx, domain.LTIKey{KID: "k1", PrivatePEM: "pem1"}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
		if err := db.RotateLTIKey(ctx, domain.LTIKey{KID: "k2", PrivatePEM: "pem2"}); err != nil {
			t.Fatal(err)
		}
		keys, err := db.LTIKeys(ctx, now.Add(-time.Minute))
		if err != nil || len(keys) != 2 || keys[0].KID != "k2" || keys[0].RetiredAt != nil || keys[1].RetiredAt == nil {
			t.Fatalf("after a rotation: %+v %v", keys, err)
		}
		if keys, _ := db.LTIKeys(ctx, now.Add(time.Minute)); len(keys) != 1 || keys[0].KID != "k2" {
			t.Errorf("past the retention: %+v", keys)
		}

		if err := db.UseLTINonce(ctx, "n-1", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := db.UseLTINonce(ctx, "n-1", now.Add(time.Minute)); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
			t.Errorf("a nonce used twice: %v, want unauthorized", err)
		}
	})
}

// TestLTIScoresOwedOnceAndLeased: owing the same score again is no new
// version; a changed one is; a leased score is not taken by a second
// sender until its lease ends; a version sent while a newer one was
// owed leaves the newer one due.
func TestLTIScoresOwedOnceAndLeased(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now()
		db.Clock = func() time.Time { return now }
		p, err := db.AddLTIPlatform(ctx, domain.LTIPlatform{Name: "p", Issuer: "https://p", ClientID: "c", DeploymentIDs: []string{"d"},
			AuthLoginURL: "https://p/a", TokenURL: "https://p/t", JWKSURL: "https://p/j"})
		if err != nil {
			t.Fatal(err)
		}
		co, err := db.EnsureCohort(ctx, "lti-x", "X")
		if err != nil {
			t.Fatal(err)
		}
		lc, err := db.SaveLTIContext(ctx, domain.LTIContext{PlatformID: p.ID, ContextID: "ctx", Title: "X", CohortID: co.ID, LineItemsURL: "https://p/li"})
		if err != nil {
			t.Fatal(err)
		}
		again, err := db.SaveLTIContext(ctx, domain.LTIContext{PlatformID: p.ID, ContextID: "ctx", CohortID: 999, MembershipsURL: "https://p/m"})
		if err != nil || again.ID != lc.ID || again.CohortID != co.ID || again.LineItemsURL != "https://p/li" || again.MembershipsURL != "https://p/m" {
			t.Fatalf("saved again: %+v %v (want its cohort and URLs kept)", again, err)
		}
		if cs, _ := db.LTIContextsOfCohort(ctx, co.ID); len(cs) != 1 {
			t.Errorf("contexts of the cohort: %+v", cs)
		}
		u, _, _ := db.CreateUser(ctx, "lena", domain.RoleLearner)
		s := domain.LTIScore{ContextPK: lc.ID, ExerciseID: "ch1", UserID: u.ID, Score: 1, MaxScore: 2, Progress: "PendingManual", SubmissionID: "s1"}
		if ch, err := db.OweLTIScore(ctx, s); err != nil || !ch {
			t.Fatalf("first owed: %v %v", ch, err)
		}
		if ch, err := db.OweLTIScore(ctx, s); err != nil || ch {
			t.Fatalf("owed again unchanged: %v %v", ch, err)
		}
		due, err := db.ClaimLTIScores(ctx, 10, time.Minute)
		if err != nil || len(due) != 1 || due[0].Version != 1 || due[0].Attempts != 1 {
			t.Fatalf("claim: %+v %v", due, err)
		}
		if more, _ := db.ClaimLTIScores(ctx, 10, time.Minute); len(more) != 0 {
			t.Fatalf("a leased score taken twice: %+v", more)
		}
		s.Score, s.Progress = 2, "FullyGraded"
		if ch, _ := db.OweLTIScore(ctx, s); !ch {
			t.Fatal("a changed score is no new version")
		}
		if err := db.LTIScoreSent(ctx, due[0]); err != nil {
			t.Fatal(err)
		}
		due, err = db.ClaimLTIScores(ctx, 10, time.Minute)
		if err != nil || len(due) != 1 || due[0].Version != 2 || due[0].Score != 2 {
			t.Fatalf("the newer version is not due: %+v %v", due, err)
		}
		if err := db.LTIScoreFailed(ctx, due[0], "429", now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if more, _ := db.ClaimLTIScores(ctx, 10, time.Minute); len(more) != 0 {
			t.Fatalf("due before its retry: %+v", more)
		}
		now = now.Add(2 * time.Hour)
		due, _ = db.ClaimLTIScores(ctx, 10, time.Minute)
		if len(due) != 1 || due[0].Attempts != 2 {
			t.Fatalf("after the backoff: %+v", due)
		}
		if err := db.LTIScoreSent(ctx, due[0]); err != nil {
			t.Fatal(err)
		}
		if more, _ := db.ClaimLTIScores(ctx, 10, time.Minute); len(more) != 0 {
			t.Fatalf("sent, yet due: %+v", more)
		}
		// One server at a time makes a line item; a stale claim is taken over.
		if u, claimed, err := db.ClaimLTILineItem(ctx, lc.ID, "ch1", time.Minute); err != nil || u != "" || !claimed {
			t.Fatalf("first claim: %q %v %v", u, claimed, err)
		}
		if _, claimed, _ := db.ClaimLTILineItem(ctx, lc.ID, "ch1", time.Minute); claimed {
			t.Fatal("claimed twice")
		}
		now = now.Add(2 * time.Minute)
		if _, claimed, _ := db.ClaimLTILineItem(ctx, lc.ID, "ch1", time.Minute); !claimed {
			t.Fatal("a stale claim was not taken over")
		}
		if err := db.SetLTILineItem(ctx, lc.ID, "ch1", "https://p/li/1"); err != nil {
			t.Fatal(err)
		}
		if err := db.SetLTILineItem(ctx, lc.ID, "ch1", "https://p/li/2"); err != nil {
			t.Fatal(err)
		}
		if li, err := db.LTILineItem(ctx, lc.ID, "ch1"); err != nil || li != "https://p/li/2" {
			t.Errorf("line item: %q %v", li, err)
		}
		if u, claimed, err := db.ClaimLTILineItem(ctx, lc.ID, "ch1", time.Minute); err != nil || u != "https://p/li/2" || claimed {
			t.Errorf("claim of a made line item: %q %v %v", u, claimed, err)
		}
	})
}
