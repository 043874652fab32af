package main

import (
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestNULOutputIsGraded: a solution whose graded cell prints a NUL
// character is graded (a mismatch, with the NUL shown escaped), on SQLite
// and on Postgres, whose TEXT columns refuse NUL: there the grade used to
// fail to save on every attempt and the submission ended "failed" with
// "lost its lease (no heartbeat)".
func TestNULOutputIsGraded(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			s := startServer(t, dbURL, "--exercises", runnerExercises, "--answers", runnerAnswers, "--warm=false")
			t.Cleanup(s.stop)
			resp, sub := upload(t, s, ada, "rx", answerWith(t, "def double(x):\n    return 'nul:\\x00:' + str(2 * x)\n"), "")
			if resp.StatusCode != 202 {
				t.Fatalf("upload: %d %v", resp.StatusCode, sub)
			}
			got := waitGraded(t, s, ada, sub["id"].(string))
			if got["status"] != "graded" {
				t.Fatalf("submission %v: %v", got["status"], got["message"])
			}
			cells, _ := got["cells"].([]any)
			var observed string
			for _, c := range cells {
				if m := c.(map[string]any); m["id"] == "q1" {
					observed, _ = m["observed"].(string)
					if m["verdict"] != "mismatch" {
						t.Errorf("q1 verdict %v, want mismatch", m["verdict"])
					}
				}
			}
			if !strings.Contains(observed, `nul:\x00:42`) {
				t.Errorf("q1 observed %q, want the NUL shown as \\x00; cells %v", observed, cells)
			}
		})
	}
}
