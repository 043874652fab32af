package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/reference"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// Test exercises of the runner tests: rxref has no reference file, so
// its references come from reference runs.
const (
	runnerExercises = "../../cmd/npugrade/testdata/runners/exercises"
	runnerAnswers   = "../../cmd/npugrade/testdata/runners/answers"
)

// newLiveEnvAt is newLiveEnv over another exercise catalogue.
func newLiveEnvAt(t *testing.T, dialect, exDir, ansDir string) (*liveEnv, *exercise.Catalog) {
	t.Helper()
	cat, err := exercise.Load(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	e := newLiveEnvOn(t, dialect, cat, httpapi.DefaultTimeouts())
	e.ctx = t.Context()
	return e, cat
}

// withQ1Output is the leased notebook with graded cell q1's outputs
// replaced by text printed to stdout: what a lying runner sends back.
func withQ1Output(t *testing.T, nb json.RawMessage, text string) json.RawMessage {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range doc["cells"].([]any) {
		cell := c.(map[string]any)
		meta, _ := cell["metadata"].(map[string]any)
		g, _ := meta["grader"].(map[string]any)
		if g != nil && g["id"] == "q1" {
			cell["outputs"] = []any{map[string]any{"output_type": "stream", "name": "stdout", "text": text}}
			found = true
		}
	}
	if !found {
		t.Fatal("no q1 cell in the leased notebook")
	}
	out, _ := json.Marshal(doc)
	return out
}

// runReference has the instructor ask for rxref's cpu reference and the
// (lying) runner answer it with q1 printing text.
func runReference(t *testing.T, e *liveEnv, staff, runner, runnerID, text string) {
	t.Helper()
	if st, body, _ := e.call(t, "POST", "/api/v1/exercises/rxref/references", staff, map[string]string{"profile": "cpu"}); st != http.StatusAccepted {
		t.Fatalf("POST references: %d %s", st, body)
	}
	completeNext(t, e, runner, runnerID, domain.JobReference, text)
}

// completeNext claims the next job as runnerID and completes it with q1
// printing text.
func completeNext(t *testing.T, e *liveEnv, runner, runnerID, kind, text string) {
	t.Helper()
	st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", runner, runnerproto.ClaimRequest{RunnerID: runnerID, WaitSeconds: 5})
	var l domain.Lease
	if err := json.Unmarshal([]byte(body), &l); st != http.StatusOK || err != nil || l.Kind != kind {
		t.Fatalf("claim a %s job: %d %s", kind, st, body)
	}
	done := runnerproto.CompleteRequest{LeaseToken: l.Token, RunnerID: runnerID,
		Result: domain.ExecutionResult{Profile: "cpu", Notebook: withQ1Output(t, l.Notebook, text)}}
	if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/"+itoa(l.JobID)+"/complete", runner, done); st != http.StatusOK && st != http.StatusNoContent {
		t.Fatalf("complete job %d: %d %s", l.JobID, st, body)
	}
}

// TestRunnerReferencesAreStaged: a runner answers a reference job with
// made-up outputs. They are staged, not used: grading has no reference
// until an instructor accepts them (then it grades against them), and a
// rejected recording is never used. The diff shows what changes per cell.
func TestRunnerReferencesAreStaged(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e, cat := newLiveEnvAt(t, d, runnerExercises, runnerAnswers)
			staff := e.token(t, "staff", domain.RoleInstructor)
			ada := e.token(t, "ada", domain.RoleLearner)
			runner := e.token(t, "r1", domain.RoleRunner)
			runnerID := e.register(t, runner, "r1")
			ex, err := cat.Get("rxref")
			if err != nil {
				t.Fatal(err)
			}
			graderRef := func() (string, error) { // the reference grading would use now
				ref, err := (&grade.Submissions{DB: e.db}).Reference(e.ctx, ex, "cpu")
				if err != nil {
					return "", err
				}
				return reference.OutputsText(ref.Cells["q1"]), nil
			}

			runReference(t, e, staff, runner, runnerID, "q1: 999\n")
			if got, err := graderRef(); err == nil {
				t.Fatalf("grading uses a staged reference before review: %q", got)
			}
			var listed []map[string]any
			if st, body, _ := e.call(t, "GET", "/api/v1/exercises/rxref/references", staff, nil); st != 200 || json.Unmarshal([]byte(body), &listed) != nil || len(listed) != 0 {
				t.Fatalf("references in use before review: %d %s", st, body)
			}
			if st, body, _ := e.call(t, "GET", "/api/v1/staged-references", ada, nil); st != http.StatusForbidden {
				t.Errorf("a learner lists staged references: %d %s", st, body)
			}
			staged := stagedList(t, e, staff, "staged")
			if len(staged) != 1 || staged[0].Exercise != "rxref" || staged[0].RunnerID != runnerID || !staged[0].Current {
				t.Fatalf("staged references: %+v", staged)
			}
			first := stagedGet(t, e, staff, staged[0].ID)
			if first.Against != "none" || len(first.Diff) != 1 || first.Diff[0].Change != "added" || !strings.Contains(first.Diff[0].Staged, "q1: 999") {
				t.Fatalf("diff of the first recording: %+v", first)
			}

			// Accepted: grading uses it — a notebook printing the made-up
			// value scores full marks, which is why a person must look.
			decide(t, e, staff, first.ID, "accept", http.StatusOK)
			decide(t, e, staff, first.ID, "reject", http.StatusConflict)
			if got, err := graderRef(); err != nil || !strings.Contains(got, "q1: 999") {
				t.Fatalf("after accept grading uses %q, %v", got, err)
			}
			sub := uploadAs(t, e, ada, "rxref", ex.AnswerBytes)
			completeNext(t, e, runner, runnerID, domain.JobGrade, "q1: 999\n")
			if st, body, _ := e.call(t, "GET", "/api/v1/submissions/"+sub, ada, nil); st != 200 || !strings.Contains(body, `"score":1`) {
				t.Fatalf("graded against the accepted reference: %d %s", st, body)
			}

			// A second recording, rejected: never used.
			runReference(t, e, staff, runner, runnerID, "q1: 7\n")
			second := stagedGet(t, e, staff, stagedList(t, e, staff, "staged")[0].ID)
			if second.Against != "database" || second.Changed != 1 || !strings.Contains(second.Diff[0].Diff, "-q1: 999") || !strings.Contains(second.Diff[0].Diff, "+q1: 7") {
				t.Fatalf("diff against the accepted reference: %+v", second)
			}
			decide(t, e, staff, second.ID, "reject", http.StatusOK)
			decide(t, e, staff, second.ID, "accept", http.StatusConflict)
			if got, err := graderRef(); err != nil || !strings.Contains(got, "q1: 999") {
				t.Fatalf("after a reject grading uses %q, %v", got, err)
			}
			events, err := e.db.AuditEvents(e.ctx, 50)
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, ev := range events {
				if ev.Actor == "staff" {
					actions = append(actions, ev.Action)
				}
			}
			if strings.Join(actions, ",") != store.AuditReferenceRejected+","+store.AuditReferenceAccepted {
				t.Errorf("audit log of the decisions: %v", actions)
			}
			for _, bad := range []string{"0", "x", "99999"} {
				if st, body, _ := e.call(t, "POST", "/api/v1/staged-references/"+bad+"/accept", staff, nil); st != http.StatusNotFound {
					t.Errorf("accept %s: %d %s, want 404", bad, st, body)
				}
			}
		})
	}
}

func stagedList(t *testing.T, e *liveEnv, token, state string) []reference.Review {
	t.Helper()
	st, body, _ := e.call(t, "GET", "/api/v1/staged-references?state="+state, token, nil)
	var out []reference.Review
	if err := json.Unmarshal([]byte(body), &out); st != 200 || err != nil {
		t.Fatalf("list staged references: %d %s", st, body)
	}
	return out
}

func stagedGet(t *testing.T, e *liveEnv, token string, id int64) reference.Review {
	t.Helper()
	st, body, _ := e.call(t, "GET", "/api/v1/staged-references/"+itoa(id), token, nil)
	var out reference.Review
	if err := json.Unmarshal([]byte(body), &out); st != 200 || err != nil {
		t.Fatalf("get staged reference %d: %d %s", id, st, body)
	}
	return out
}

func decide(t *testing.T, e *liveEnv, token string, id int64, how string, want int) {
	t.Helper()
	st, body, _ := e.call(t, "POST", "/api/v1/staged-references/"+itoa(id)+"/"+how, token, map[string]string{"note": "checked by hand"})
	if st != want {
		t.Fatalf("%s staged reference %d: %d %s, want %d", how, id, st, body, want)
	}
}

// uploadAs submits nb to exercise as token's user and returns the id.
func uploadAs(t *testing.T, e *liveEnv, token, exerciseID string, nb []byte) string {
	t.Helper()
	st, b := uploadConcurrent(e, token, exerciseID, nb)
	var sub map[string]any
	if err := json.Unmarshal([]byte(b), &sub); st != http.StatusAccepted || err != nil {
		t.Fatalf("upload: %d %s", st, b)
	}
	return sub["id"].(string)
}
