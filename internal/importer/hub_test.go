package importer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

// hubSource reads a hub notebook with its answer text and lab notebook
// from testdata/hub, in the tutorial's layout (answer/NN.0x_answer.*).
func hubSource(t *testing.T, rel, prefix string) importer.HubSource {
	t.Helper()
	dir := filepath.Join("testdata", "hub", filepath.Dir(rel))
	nb, err := os.ReadFile(filepath.Join("testdata", "hub", rel))
	if err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile(filepath.Join(dir, "answer", prefix+"_answer.txt"))
	if err != nil {
		t.Fatal(err)
	}
	src := importer.HubSource{Notebook: nb, AnswerText: string(txt)}
	if lab, err := os.ReadFile(filepath.Join(dir, "answer", prefix+"_answer.ipynb")); err == nil {
		src.Lab = lab
	}
	return src
}

func TestParseHubAnswers(t *testing.T) {
	t.Parallel()
	txt, err := os.ReadFile("testdata/hub/tutorial/01_basics/answer/01.03_answer.txt")
	if err != nil {
		t.Fatal(err)
	}
	items, errs := importer.ParseHubAnswers(string(txt))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[int]string{1: "√", 2: "×", 3: "A", 4: "C", 7: "B", 10: "B", 11: "ABC"}
	got := map[int]importer.HubAnswer{}
	for _, it := range items {
		got[it.N] = it
	}
	if len(items) != 11 {
		t.Fatalf("%d items, want 11", len(items))
	}
	for n, ans := range want {
		if got[n].Answer != ans {
			t.Errorf("item %d: answer %q (written %q), want %q", n, got[n].Answer, got[n].Raw, ans)
		}
	}
	if q := got[2].Question; !strings.Contains(q, "相加") || !strings.Contains(q, "(4, 6)") {
		t.Errorf("item 2's question spans two lines, got %q", q)
	}
	if e := got[2].Explanation; !strings.Contains(e, "逐元素") || !strings.Contains(e, "仍为 (2, 3)") {
		t.Errorf("item 2's explanation spans two lines, got %q", e)
	}
	if got[10].Kind != importer.KindSingle || got[11].Kind != importer.KindMulti || got[1].Kind != importer.KindJudge {
		t.Errorf("kinds: %q %q %q", got[1].Kind, got[10].Kind, got[11].Kind)
	}
}

// hubGrader is what the tests read of a generated cell's metadata.grader.
type hubGrader struct {
	ID         string            `json:"id"`
	Points     float64           `json:"points"`
	Solution   bool              `json:"solution"`
	Starter    string            `json:"starter"`
	Compare    string            `json:"compare"`
	Feedback   string            `json:"feedback"`
	Visibility string            `json:"visibility"`
	Requires   map[string]string `json:"requires"`
	Manual     *struct {
		Points float64 `json:"points"`
		Rubric []struct {
			ID     string  `json:"id"`
			Points float64 `json:"points"`
			Text   string  `json:"text"`
		} `json:"rubric"`
	} `json:"manual"`
}

func graders(t *testing.T, nb *notebook.Notebook) map[string]hubGrader {
	t.Helper()
	out := map[string]hubGrader{}
	for _, c := range nb.Cells {
		g := c.MustGrader()
		if g.ID == "" {
			continue
		}
		var h hubGrader
		if err := json.Unmarshal(g.Raw, &h); err != nil {
			t.Fatal(err)
		}
		if _, err := compare.ParseRule(nil, g.Raw); err != nil && g.Manual == nil { // a manual cell is never compared
			t.Errorf("%s: %v", g.ID, err)
		}
		out[g.ID] = h
	}
	return out
}

func TestImportHub(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rel, prefix string
		points      map[string]float64 // graded check cells
		labs        []string
		kept        []string // text of the notebook that must still be there
	}{
		{rel: "tutorial/01_basics/01.02_tensors.ipynb", prefix: "01.02",
			points: map[string]float64{"q1": 1, "q2": 1},
			kept:   []string{"![示意图](./images/tensor.png)", "x = torch.zeros(2, 3)", "- D. `x` 是一维张量", "## 2. 课后练习"}},
		{rel: "tutorial/01_basics/01.03_chapter_practice.ipynb", prefix: "01.03",
			points: map[string]float64{"q1": 5, "q2": 5, "q3": 5, "q4": 5, "q5": 5, "q6": 5, "q7": 5, "q8": 5, "q9": 5, "q10": 5, "q11": 10},
			kept:   []string{"### 一、判断题（每题 5分）", "恭喜你完成了本章的学习", "- C. `torch.rand`"}},
		{rel: "tutorial/02_labs/02.04_chapter_practice.ipynb", prefix: "02.04",
			points: map[string]float64{"q1": 1}, labs: []string{"lab2", "lab"},
			kept: []string{"   1. 导入 torch_npu；", "比较在 CPU 和 NPU 上"}},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			t.Parallel()
			nb, rep, err := importer.ImportHub(hubSource(t, tt.rel, tt.prefix))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Formats) != 1 || rep.Formats[0] != "learning-hub" {
				t.Errorf("formats %v", rep.Formats)
			}
			b, err := notebook.Encode(nb)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := notebook.Parse(b, notebook.Limits{RequireIDs: true}); err != nil {
				t.Fatalf("the answer notebook is not valid 4.5 with ids: %v", err)
			}
			text := string(b)
			for _, k := range tt.kept {
				if !strings.Contains(text, strings.ReplaceAll(k, `"`, `\"`)) {
					t.Errorf("the notebook's own text %q is gone", k)
				}
			}
			if strings.Contains(text, "_answer.txt") || strings.Contains(text, "查看参考答案") || strings.Contains(text, "](./answer/") {
				t.Error("the answer-printing cell or a pointer to the answers is still there")
			}
			gs := graders(t, nb)
			checkHubGraders(t, gs, tt.points, tt.labs)
			if len(tt.labs) > 0 {
				// Each lab task gets its own reference code from the lab answer notebook.
				if c := nb.CellByGraderID("lab2"); c == nil || !strings.Contains(string(c.Source), "torch.ones(2, 2, device='npu')") {
					t.Errorf("lab2's reference code: %v", c)
				}
				if c := nb.CellByGraderID("lab"); c == nil || !strings.Contains(string(c.Source), "timing lab") {
					t.Errorf("the unnumbered lab's reference code: %v", c)
				}
			}
			starter, err := notebook.Starter(nb)
			if err != nil {
				t.Fatal(err)
			}
			sb, _ := notebook.Encode(starter)
			if strings.Contains(string(sb), "BEGIN SOLUTION") || strings.Contains(string(sb), "解析") || strings.Contains(string(sb), "torch.ones(2, 2, device='npu')") {
				t.Error("the starter shows an answer, an explanation or the lab's reference code")
			}
		})
	}
}

func checkHubGraders(t *testing.T, gs map[string]hubGrader, points map[string]float64, labs []string) {
	t.Helper()
	for id, p := range points {
		g, impl := gs[id], gs[id+"-impl"]
		if g.Points != p || g.Compare != "choice" || g.Feedback == "" || g.Visibility != "after_due_date" {
			t.Errorf("%s: check cell %+v, want %g points, compare choice, feedback shown after the deadline", id, g, p)
		}
		if !impl.Solution || !strings.HasPrefix(impl.Starter, id+" = None  # ") {
			t.Errorf("%s-impl: %+v, want a solution cell whose starter is %q", id, impl, id+" = None")
		}
	}
	for _, id := range labs {
		g := gs[id]
		if !g.Solution || g.Points != 0 || g.Requires["accelerator"] != "npu" || !strings.Contains(g.Starter, "YOUR CODE HERE") {
			t.Errorf("lab %s: %+v, want an ungraded solution cell on an NPU", id, g)
		}
		if g.Manual == nil || g.Manual.Points <= 0 || len(g.Manual.Rubric) == 0 {
			t.Errorf("lab %s: %+v, want metadata.grader.manual with a rubric", id, g)
		}
	}
	n := 0
	for _, g := range gs {
		if g.Points > 0 {
			n++
		}
	}
	if n != len(points) {
		t.Errorf("%d graded cells, want %d", n, len(points))
	}
}

// TestImportHubRefuses: every mismatch between notebook and answer text is
// listed at once, and no notebook is returned.
func TestImportHubRefuses(t *testing.T) {
	t.Parallel()
	nb, _, err := importer.ImportHub(hubSource(t, "broken/03_bad/03.01_quiz.ipynb", "03.01"))
	if err == nil || nb != nil {
		t.Fatal("imported a notebook its answer text does not fit")
	}
	for _, want := range []string{
		`item 1 (判断题): answer "也许" is not 正确/错误`,
		`item 2 (单选题): a single choice has the answer "AB"`,
		"item 3 (多选题) has no answer",
		"answer 4 (单选题) has no question in the notebook",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
}
