package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"

	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestStartersLeakNothing submits each chapter's untouched starter, with
// the shipped exercise defaults, to a server grading in the cpu
// environment, and reads back everything a learner can: the submission
// (API), the executed notebook (API and page), the feedback notebook and
// the submission page. None may hold a quiz item's explanation (解析) or
// its expected answer as the check cell prints it. A ch1 starter that hides every traceback scores
// no more than the untouched one.
func TestStartersLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	requireSandboxExec(t)
	cat, err := exercise.Load(filepath.Join(repoRoot, "exercises"), filepath.Join(repoRoot, "answers"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			s := startServer(t, dbURL, "--local-runner", "1")
			defer s.stop()
			web := signedIn(t, s.url, ada)
			for _, id := range []string{"ch1", "ch2", "ch3", "ch4", "ch5"} {
				ex, err := cat.Get(id)
				if err != nil {
					t.Fatal(err)
				}
				secrets := quizSecrets(t, ex)
				if len(secrets) < 10 {
					t.Fatalf("%s: only %d quiz secrets found; the scan is broken", id, len(secrets))
				}
				starter := readFile(t, filepath.Join(ex.Dir, ex.Starter))
				resp, sub := upload(t, s, ada, id, starter, "")
				if resp.StatusCode != http.StatusAccepted {
					t.Fatalf("%s: upload %d %v", id, resp.StatusCode, sub)
				}
				sid := sub["id"].(string)
				graded := waitGraded(t, s, ada, sid)
				if graded["status"] != "graded" {
					t.Fatalf("%s: %v", id, graded)
				}
				reads := map[string]string{}
				_, b := request(t, "GET", s.url+"/api/v1/submissions/"+sid, ada, nil, "", nil)
				reads["API submission"] = string(b)
				_, b = request(t, "GET", s.url+"/api/v1/submissions/"+sid+"/executed", ada, nil, "", nil)
				reads["API executed notebook"] = string(b)
				for _, p := range []string{"/submissions/" + sid, "/submissions/" + sid + "/notebook", "/submissions/" + sid + "/feedback"} {
					reads["page "+p] = getPage(t, web, s.url+p)
				}
				for where, body := range reads {
					if len(body) < 200 {
						t.Errorf("%s %s: short answer %q", id, where, body)
					}
					for _, sec := range secrets {
						if strings.Contains(body, sec) {
							t.Errorf("%s %s holds %q", id, where, sec)
						}
					}
				}
				if id == "ch1" {
					untouched := graded["score"].(float64)
					cheat := withTracebacksHidden(t, starter)
					resp, sub := upload(t, s, ada, id, cheat, "")
					if resp.StatusCode != http.StatusAccepted {
						t.Fatalf("cheat upload %d %v", resp.StatusCode, sub)
					}
					g := waitGraded(t, s, ada, sub["id"].(string))
					if sc := g["score"].(float64); sc > untouched {
						t.Errorf("ch1 with hidden tracebacks scores %g, the untouched starter %g", sc, untouched)
					}
				}
			}
		})
	}
}

// quizSecrets are, for every after_due_date quiz item of ex, its
// explanation and its expected answer as the check cell prints it.
func quizSecrets(t *testing.T, ex *exercise.Exercise) []string {
	t.Helper()
	ref, err := ex.Reference("cpu")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range ex.Answer.Cells {
		g := c.MustGrader()
		var raw struct {
			Compare    string `json:"compare"`
			Visibility string `json:"visibility"`
			Feedback   string `json:"feedback"`
		}
		if g.Raw == nil || json.Unmarshal(g.Raw, &raw) != nil || raw.Compare != "choice" || raw.Visibility != "after_due_date" {
			continue
		}
		if raw.Feedback != "" {
			r := []rune(strings.TrimSpace(strings.TrimPrefix(raw.Feedback, "解析：")))
			out = append(out, string(r[:min(len(r), 24)]))
		}
		// The printed answer ("q9: ×"), which may come in several stream outputs.
		var printed strings.Builder
		for _, o := range ref.Cells[g.ID] {
			printed.WriteString(string(o.Text))
		}
		if txt := strings.TrimSpace(printed.String()); len([]rune(txt)) >= 4 {
			out = append(out, txt)
		}
	}
	return out
}

func signedIn(t *testing.T, base, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c
}

func getPage(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d", u, resp.StatusCode)
	}
	return string(b)
}

// withTracebacksHidden is nb with a first solution cell that hides every
// later traceback.
func withTracebacksHidden(t *testing.T, nb []byte) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc["cells"].([]any) {
		cell := c.(map[string]any)
		meta, _ := cell["metadata"].(map[string]any)
		if g, _ := meta["grader"].(map[string]any); g != nil && g["solution"] == true {
			cell["source"] = "get_ipython().showtraceback = lambda *a, **k: None\n" + joinSource(cell["source"])
			out, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatal("no solution cell")
	return nil
}

func joinSource(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	for _, l := range v.([]any) {
		b.WriteString(l.(string))
	}
	return b.String()
}
