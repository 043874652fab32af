package intake_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestStaleReferencesRefuseUploads: an exercise whose answer changed
// after its references were recorded refuses uploads with a conflict in
// the learner's language; nothing is stored or queued and no attempt is
// counted. Once a usable reference exists, uploads are taken again.
func TestStaleReferencesRefuseUploads(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			cat, err := exercise.Load("../../exercises", "../../answers")
			if err != nil {
				t.Fatal(err)
			}
			ex, err := cat.Get("ch1")
			if err != nil {
				t.Fatal(err)
			}
			fresh := ex.References["cpu"]
			stale := *fresh
			stale.AnswerSHA256 = "recorded-from-an-older-answer"
			ex.References["cpu"] = &stale
			q := jobs.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
			svc := &intake.Service{DB: db, Queue: q, Catalog: cat, References: &grade.Submissions{DB: db}}
			u, _, err := db.CreateUser(ctx, "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = svc.Submit(ctx, intake.Request{User: u, ExerciseID: "ch1", Notebook: ex.StarterBytes})
			if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(err.Error(), "参考输出尚未重新录制") || !strings.Contains(err.Error(), "未计入次数") {
				t.Fatalf("submit with stale references: %v, want a conflict in Chinese", err)
			}
			if n, _ := db.CountSubmissions(ctx, u.ID, "ch1", time.Time{}); n != 0 {
				t.Errorf("%d submissions stored", n)
			}
			if depth, _ := q.Depth(ctx); depth[domain.JobQueued] != 0 {
				t.Errorf("jobs queued: %v", depth)
			}
			ex.References["cpu"] = fresh // recorded again
			if _, created, err := svc.Submit(ctx, intake.Request{User: u, ExerciseID: "ch1", Notebook: ex.StarterBytes}); err != nil || !created {
				t.Fatalf("submit after recording: %v %v", created, err)
			}
			if depth, _ := q.Depth(ctx); depth[domain.JobQueued] != 1 {
				t.Errorf("after recording, jobs: %v, want one queued", depth)
			}
		})
	}
}
