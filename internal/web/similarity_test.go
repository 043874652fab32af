package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestSimilarityPage: the instructor's similarity page shows the copied
// pair with its fragments side by side, learner code escaped (a copied
// </script> stays text), in English and Chinese; learners may not open it.
func TestSimilarityPage(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../answers/ch1/01.05_chapter_practice_answer.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	// The first solution cell of ch1 gets the learner's code; the others
	// keep the answer's, which all four share (an idiom, not a match).
	withCode := func(code string) []byte {
		var nb map[string]any
		if err := json.Unmarshal(raw, &nb); err != nil {
			t.Fatal(err)
		}
		for _, c := range nb["cells"].([]any) {
			cell := c.(map[string]any)
			meta, _ := cell["metadata"].(map[string]any)
			g, _ := meta["grader"].(map[string]any)
			if sol, _ := g["solution"].(bool); sol {
				cell["source"] = code
				break
			}
		}
		b, _ := json.Marshal(nb)
		return b
	}
	code := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		b, err := os.ReadFile(filepath.Join("..", "similarity", "testdata", n+".py"))
		if err != nil {
			t.Fatal(err)
		}
		code[n] = string(b)
	}
	hostile := "\ndef banner(width):\n    title = \"</script><img src=x onerror=alert(1)>\"\n    return title.upper().center(width) + title.lower()[:width]\n"
	code["a"] += hostile
	code["b"] += hostile
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, d)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			subs := &intake.Service{DB: e.db, Queue: jobs.New(e.db, nil), Catalog: e.cat}
			var learnerTok string
			for _, n := range []string{"a", "b", "c", "d"} {
				u, tok, err := e.db.CreateUser(ctx, "learner-"+n, domain.RoleLearner)
				if err != nil {
					t.Fatal(err)
				}
				learnerTok = tok
				if _, _, err := subs.Submit(ctx, intake.Request{User: u, ExerciseID: "ch1", Notebook: withCode(code[n])}); err != nil {
					t.Fatal(err)
				}
			}
			lc := client()
			e.signIn(t, lc, learnerTok)
			if resp, _ := do(t, lc, "GET", e.srv.URL+"/dashboard/exercises/ch1/similarity", nil, nil); resp.StatusCode != 403 {
				t.Errorf("learner: %d", resp.StatusCode)
			}
			c := client()
			e.signIn(t, c, teacher)
			resp, body := do(t, c, "GET", e.srv.URL+"/dashboard/exercises/ch1/similarity?lang=en", nil, nil)
			if resp.StatusCode != 200 || !strings.Contains(body, `id="pair-0"`) || strings.Contains(body, `id="pair-1"`) {
				t.Fatalf("similarity page: %d %s", resp.StatusCode, body)
			}
			pair := between(body, `id="pair-0"`, "</article>")
			if !strings.Contains(pair, "learner-a</a> ↔ <a") || !strings.Contains(pair, "learner-b") || strings.Count(pair, `class="grid two sim-fragment"`) == 0 {
				t.Errorf("top pair: %s", pair)
			}
			if !strings.Contains(pair, "for index, value in enumerate(values)") || !strings.Contains(pair, "for i, v in enumerate(xs)") {
				t.Errorf("the fragments are not side by side: %s", pair)
			}
			if strings.Contains(body, "<img src=x") || !strings.Contains(body, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") {
				t.Errorf("learner code is not escaped")
			}
			if !strings.Contains(body, "Advisory only") {
				t.Errorf("the page does not say the report is advisory")
			}
			_, body = do(t, c, "GET", e.srv.URL+"/dashboard/exercises/ch1/similarity?lang=zh-CN", nil, nil)
			if !strings.Contains(body, "仅供参考") || !strings.Contains(body, "异常相似的配对") {
				t.Errorf("Chinese page")
			}
		})
	}
}
