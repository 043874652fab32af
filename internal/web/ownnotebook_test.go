package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestLearnerDownloadsOwnNotebook: a learner downloads their own executed
// notebook and a feedback notebook; neither has the probe cells, the probe
// seed or the output of a hidden question, and another learner gets 404;
// staff see the seed on the submission page.
// The exercise page shows the deadline, the late-penalty schedule and
// the attempts left, times to the second.
func TestLearnerDownloadsOwnNotebook(t *testing.T) {
	t.Parallel()
	// q2 visible whatever the chapter says (its quiz items show details only after the deadline).
	exDir, ansDir := exercisetest.CopyWith(t, "../../exercises", "../../answers", "ch1", map[string]any{
		"visibility":      map[string]string{"q1": "hidden", "q2": "visible"},
		"deadline":        "2999-01-02T03:04:05Z",
		"late_penalty":    []map[string]any{{"after": "48h", "multiplier": 0.5}, {"after": "1h", "multiplier": 0.9}},
		"max_submissions": 3,
	})
	// The executed notebook: the answer with outputs on q1 and q2 and the
	// probe seed the server records.
	raw, err := os.ReadFile(filepath.Join(ansDir, "ch1", "01.05_chapter_practice_answer.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	nb, err := notebook.ParseStored(raw)
	if err != nil {
		t.Fatal(err)
	}
	nb.Metadata[notebook.SeedMetaKey] = json.RawMessage(`{"probe_seed": 424242}`)
	for _, id := range []string{"q1", "q2"} {
		c := nb.CellByGraderID(id)
		c.Outputs = []*notebook.Output{{OutputType: notebook.OutputStream, Name: "stdout", Text: notebook.MultilineString("OUT-OF-" + id + "\n")}}
	}
	executed, err := notebook.Encode(nb)
	if err != nil {
		t.Fatal(err)
	}
	probeSrc := ""
	for _, c := range nb.Cells {
		if c.MustGrader().Probe {
			probeSrc = strings.TrimSpace(string(c.Source))
		}
	}
	if probeSrc == "" {
		t.Fatal("the ch1 answer has no probe cell to hide")
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, d, exDir, ansDir)
			ada := e.user(t, "ada", domain.RoleLearner)
			bob := e.user(t, "bob", domain.RoleLearner)
			ctx := context.Background()
			u, _ := e.db.UserByName(ctx, "ada")
			sub, _, err := e.db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v",
				Upload: []byte("{}"), Rebuilt: []byte("{}"), Job: jobs.New(e.db, nil).GradeJob("ch1", domain.Requirement{}, 1)})
			if err != nil {
				t.Fatal(err)
			}
			err = e.db.InTx(ctx, func(tx *store.Tx) error {
				return tx.SaveGrade(store.Grade{Status: domain.StatusGraded, SubmissionID: sub.ID, Score: 1, MaxScore: 2, Executed: executed, Cells: []domain.CellResult{
					{CellID: "q1", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true, Message: "SECRET-MESSAGE", Observed: "SECRET"},
					{CellID: "q2", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true, Message: "output differs from the expected output at line 2 (column 5)"},
					{CellID: "q13-probe", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true, Message: "hidden test passes"},
				}})
			})
			if err != nil {
				t.Fatal(err)
			}
			ac, bc := client(), client()
			e.signIn(t, ac, ada)
			e.signIn(t, bc, bob)

			for _, kind := range []string{"notebook", "feedback"} {
				resp, body := do(t, ac, "GET", e.srv.URL+"/submissions/"+sub.ID+"/"+kind+"?lang=zh-CN", nil, nil)
				if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
					t.Fatalf("%s: %d %s", kind, resp.StatusCode, resp.Header.Get("Content-Disposition"))
				}
				got, err := notebook.ParseExecuted([]byte(body))
				if err != nil {
					t.Fatalf("%s is not a notebook: %v", kind, err)
				}
				for _, leak := range []string{"424242", probeSrc, "OUT-OF-q1", "SECRET"} {
					if strings.Contains(body, leak) {
						t.Errorf("the learner's %s contains %q", kind, leak)
					}
				}
				if !strings.Contains(body, "OUT-OF-q2") {
					t.Errorf("the learner's %s lost their own visible output", kind)
				}
				if kind == "feedback" {
					i := indexOfGrader(got, "q2")
					if i < 0 || i+1 >= len(got.Cells) || got.Cells[i+1].CellType != "markdown" ||
						!strings.Contains(string(got.Cells[i+1].Source), "输出第 2 行（第 5 列）与期望输出不同") ||
						!strings.Contains(string(got.Cells[i+1].Source), "**第 2 题 · 输出不符 0 / 1**") {
						t.Errorf("no Chinese feedback cell after q2: %+v", got.Cells[min(i+1, len(got.Cells)-1)])
					}
					if c := got.Cells[indexOfGrader(got, "q1")+1]; !strings.Contains(string(c.Source), "本题的详细信息已隐藏") {
						t.Errorf("hidden q1's feedback cell: %q", c.Source)
					}
				}
				if resp, _ := do(t, bc, "GET", e.srv.URL+"/submissions/"+sub.ID+"/"+kind, nil, nil); resp.StatusCode != 404 {
					t.Errorf("another learner's %s: %d", kind, resp.StatusCode)
				}
			}

			_, page := do(t, ac, "GET", e.srv.URL+"/exercises/ch1?lang=en", nil, nil)
			for _, want := range []string{`<time datetime="2999-01-02T03:04:05Z">2999-01-02 03:04:05 UTC</time>`,
				"more than 1 hour late: score × 0.9", "more than 2 days late: score × 0.5", "2 attempts left · 1 attempt used"} {
				if !strings.Contains(page, want) {
					t.Errorf("exercise page lacks %q", want)
				}
			}
			if i, j := strings.Index(page, "1 hour late"), strings.Index(page, "2 days late"); i > j {
				t.Error("late-penalty steps not in order of lateness")
			}
			_, page = do(t, ac, "GET", e.srv.URL+"/submissions/"+sub.ID, nil, nil)
			if !strings.Contains(page, `href="/submissions/`+sub.ID+`/feedback"`) ||
				!strings.Contains(page, sub.CreatedAt.UTC().Format(time.RFC3339)) {
				t.Errorf("submission page lacks the downloads or the exact time")
			}
			if strings.Contains(page, "424242") {
				t.Error("the learner's submission page shows the probe seed")
			}
			// Feedback names questions as the notebook numbers them.
			_, page = do(t, ac, "GET", e.srv.URL+"/submissions/"+sub.ID+"?lang=zh-CN", nil, nil)
			for _, want := range []string{`<th scope="row">第 2 题</th>`, `<th scope="row">第 13 题 · 隐藏测试</th>`, `<option value="q2">第 2 题</option>`} {
				if !strings.Contains(page, want) {
					t.Errorf("the learner's feedback lacks %q", want)
				}
			}
			if strings.Contains(page, ">q13-probe<") {
				t.Error("the learner's feedback still labels a row by its cell id")
			}
			// Staff see the seed, with which check reproduces the grade.
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			tc := client()
			e.signIn(t, tc, teacher)
			if _, page = do(t, tc, "GET", e.srv.URL+"/dashboard/submissions/"+sub.ID, nil, nil); !strings.Contains(page, `<code id="probe-seed">424242</code>`) ||
				!strings.Contains(page, "--seed 424242") {
				t.Errorf("the staff submission page does not show the probe seed")
			}
			if !strings.Contains(page, `<th scope="row">Question 13 · hidden test (q13-probe)</th>`) {
				t.Errorf("the staff page does not name the question and the cell")
			}
		})
	}
}

func indexOfGrader(nb *notebook.Notebook, id string) int {
	for i, c := range nb.Cells {
		if c.MustGrader().ID == id {
			return i
		}
	}
	return -1
}
