package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/events"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// submit stores a submission with its queued job.
func submit(t *testing.T, db *store.DB, q *jobs.Queue, user int64) domain.Submission {
	t.Helper()
	sub, _, err := db.CreateSubmission(context.Background(), store.NewSubmission{UserID: user, ExerciseID: "ch1", ExerciseVersion: "v",
		Upload: []byte(`{"u":1}`), Rebuilt: []byte(`{"r":1}`), Job: q.GradeJob("ch1", domain.Requirement{}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// TestOutboxDelivery: grading and failing write their events with the
// change; the deliverer hands each to the notifier once it commits, and
// offers an undelivered one again after a failed delivery. A canceled job
// stops its runner (heartbeat), refuses its result and fails its
// submission with a "failed" event. A token's use is recorded.
func TestOutboxDelivery(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			clock := time.Now().UTC()
			db.Clock = func() time.Time { return clock }
			q := jobs.New(db, nil)
			u, token, err := db.CreateUser(ctx, "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}

			graded := submit(t, db, q, u.ID)
			c, err := q.Claim(ctx, "r1", nil, time.Minute)
			if err != nil || c == nil {
				t.Fatalf("claim: %+v %v", c, err)
			}
			err = q.Complete(ctx, c.Job.ID, c.Job.LeaseToken, func(tx *store.Tx) error {
				return tx.SaveGrade(store.Grade{Status: domain.StatusGraded, SubmissionID: graded.ID, Score: 1, MaxScore: 2, Profile: "cpu"})
			})
			if err != nil {
				t.Fatal(err)
			}

			canceled := submit(t, db, q, u.ID)
			c2, err := q.Claim(ctx, "r1", nil, time.Minute)
			if err != nil || c2 == nil || c2.Job.SubmissionID != canceled.ID {
				t.Fatalf("claim 2: %+v %v", c2, err)
			}
			if _, err := q.Cancel(ctx, c2.Job.ID, "canceled by teacher"); err != nil {
				t.Fatal(err)
			}
			if stop, err := q.Heartbeat(ctx, c2.Job.ID, c2.Job.LeaseToken, time.Minute); !stop || err != nil {
				t.Errorf("heartbeat of a canceled job: stop=%v %v", stop, err)
			}
			if err := q.Complete(ctx, c2.Job.ID, c2.Job.LeaseToken, nil); !errors.Is(err, domain.ErrLeaseLost) {
				t.Errorf("complete of a canceled job: %v", err)
			}
			if _, err := q.Cancel(ctx, c2.Job.ID, "again"); domain.ErrorCode(err) != domain.ECONFLICT {
				t.Errorf("cancel twice: %v", err)
			}
			if _, err := q.Cancel(ctx, 99999, "none"); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Errorf("cancel a missing job: %v", err)
			}
			if s, _ := db.Submission(ctx, canceled.ID); s.Status != domain.StatusFailed || s.Message != "canceled by teacher" {
				t.Errorf("canceled submission: %s %q", s.Status, s.Message)
			}

			var got []domain.Event
			fail := true
			dl := &events.Deliverer{DB: db, Notifier: events.NotifierFunc(func(_ context.Context, e domain.Event) error {
				if fail {
					return errors.New("the LMS is down")
				}
				got = append(got, e)
				return nil
			})}
			if n, err := dl.DeliverOnce(ctx); n != 0 || err != nil {
				t.Fatalf("failing notifier: %d %v", n, err)
			}
			fail = false
			if n, _ := dl.DeliverOnce(ctx); n != 0 {
				t.Fatalf("a failed event came back before its back-off: %d", n)
			}
			clock = clock.Add(time.Hour)
			if n, err := dl.DeliverOnce(ctx); n != 2 || err != nil {
				t.Fatalf("delivered %d, %v; want 2", n, err)
			}
			if got[0].Kind != domain.EventGraded || got[0].Subject != graded.ID || got[1].Kind != domain.EventFailed || got[1].Subject != canceled.ID || got[1].Attempts != 2 {
				t.Errorf("events %+v", got)
			}
			clock = clock.Add(time.Hour)
			if n, _ := dl.DeliverOnce(ctx); n != 0 {
				t.Errorf("delivered again: %d", n)
			}

			if _, err := db.UserByToken(ctx, token); err != nil {
				t.Fatal(err)
			}
			toks, err := db.Tokens(ctx)
			if err != nil || len(toks) != 1 || toks[0].LastUsedAt == nil || toks[0].LastUsedAt.Sub(clock).Abs() > time.Second {
				t.Errorf("token last used: %+v %v", toks, err)
			}
		})
	}
}
