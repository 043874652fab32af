package store_test

import (
	"context"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestLearnerOutputStoredLosslessly: whatever bytes a learner's program
// printed — NUL, bytes that are not UTF-8, the replacement of a lone
// surrogate, text that looks like our escape — a cell result stores them
// and reads them back unchanged. Postgres TEXT refuses NUL and invalid
// UTF-8, which used to fail the whole grade.
func TestLearnerOutputStoredLosslessly(t *testing.T) {
	t.Parallel()
	hostile := []string{
		"q1 = \x00",
		"\xff\xfe not UTF-8 \xc0\xaf",
		"lone surrogate \ufffd and \\ud800",
		"\x1bnpugrade-quoted:\"x\"",
		"plain text, 中文, tabs\tand\nnewlines",
		"",
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := learner(t, db)
		sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v",
			Upload: []byte("{}"), Rebuilt: []byte("{}"), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1)})
		if err != nil {
			t.Fatal(err)
		}
		var cells []domain.CellResult
		for i, h := range hostile {
			cells = append(cells, domain.CellResult{CellID: "q" + string(rune('a'+i)), Verdict: "mismatch", Counted: true,
				Message: h, Observed: h, Expected: h + "!", Diff: "-" + h})
		}
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			return tx.SaveGrade(store.Grade{Status: scoring.Status(cells), SubmissionID: sub.ID, MaxScore: 1, Profile: "cpu", Cells: cells})
		}); err != nil {
			t.Fatalf("save a grade with hostile output: %v", err)
		}
		got, err := db.Submission(ctx, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Cells) != len(cells) {
			t.Fatalf("%d cells back, want %d", len(got.Cells), len(cells))
		}
		for i, c := range got.Cells {
			w := cells[i]
			if c.Message != w.Message || c.Observed != w.Observed || c.Expected != w.Expected || c.Diff != w.Diff {
				t.Errorf("cell %d: stored %q/%q/%q/%q, read back %q/%q/%q/%q", i, w.Message, w.Observed, w.Expected, w.Diff,
					c.Message, c.Observed, c.Expected, c.Diff)
			}
		}
		if err := db.MarkFailed(sub.ID, "runner said \x00\xff"); err != nil {
			t.Fatalf("a failure reason with NUL and invalid UTF-8: %v", err)
		}
		if got, _ := db.Submission(ctx, sub.ID); got.Message != `runner said \x00\xff` {
			t.Errorf("failure reason stored as %q, want it escaped", got.Message)
		}
	})
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ok\n\ttab":   "ok\n\ttab",
		"a\x00b":      `a\x00b`,
		"\xff中":       `\xff中`,
		"bell\x07del": `bell\x07del`,
	} {
		if got := store.Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
