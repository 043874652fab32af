package exercise_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The course's statements about TorchAir must agree with the released
// sources (7.3.0, 26.0.0) or with the course notebooks they cite. These
// tests pin the corrected wording of the statements that once contradicted
// them, so that an edit cannot bring the old claim back unnoticed. Each case
// names the file it follows.

// courseCell is one cell of an answer notebook as these tests read it: its
// source, and the 解析 of its grader metadata.
type courseCell struct {
	Source   string
	Feedback string
}

// answerNotebook reads answers/<id>/*_answer.ipynb and returns its cells by
// grader id, plus its markdown cells in order.
func answerNotebook(t *testing.T, id string) (map[string]courseCell, []string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "answers", id, "*_answer.ipynb"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("%s: want one answer notebook, got %v (%v)", id, paths, err)
	}
	raw, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			CellType string          `json:"cell_type"`
			Source   json.RawMessage `json:"source"`
			Metadata struct {
				Grader struct {
					ID       string `json:"id"`
					Feedback string `json:"feedback"`
				} `json:"grader"`
			} `json:"metadata"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(raw, &nb); err != nil {
		t.Fatalf("%s: %v", paths[0], err)
	}
	cells := map[string]courseCell{}
	var markdown []string
	for _, c := range nb.Cells {
		var lines []string
		var one string
		src := ""
		if json.Unmarshal(c.Source, &lines) == nil {
			src = strings.Join(lines, "")
		} else if json.Unmarshal(c.Source, &one) == nil {
			src = one
		}
		if c.CellType == "markdown" {
			markdown = append(markdown, src)
		}
		if id := c.Metadata.Grader.ID; id != "" {
			cells[id] = courseCell{Source: src, Feedback: c.Metadata.Grader.Feedback}
		}
	}
	return cells, markdown
}

// question returns the markdown cell whose text holds heading (e.g.
// "### 第 8 题").
func question(t *testing.T, markdown []string, heading string) string {
	t.Helper()
	var found []string
	for _, m := range markdown {
		if strings.Contains(m, heading) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one markdown cell with %q, got %d", heading, len(found))
	}
	return found[0]
}

func mustContain(t *testing.T, where, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not say %q", where, w)
		}
	}
}

func mustNotContain(t *testing.T, where, text string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(text, u) {
			t.Errorf("%s still says %q", where, u)
		}
	}
}

const superKernelCourse = "tutorials/TorchAir_development/04_advanced_features/04.06_superkernel.ipynb"

// The requirement that SuperKernel needs static_kernel_compile is the
// course's (04.06_superkernel.ipynb, 使用约束), not a released source's:
// the explanations cite that notebook, never pull requests a learner cannot
// open as a release.
func TestSuperKernelStatementsCiteTheCourse(t *testing.T) {
	t.Parallel()
	cells, markdown := answerNotebook(t, "ch4")
	mustContain(t, "ch4 q8's 解析", cells["q8"].Feedback, superKernelCourse, "需要同时开启静态 Kernel 编译")
	mustNotContain(t, "ch4 q8's 解析", cells["q8"].Feedback, "--enable_super_kernel", "只适用于静态图")
	mustContain(t, "ch4 q10's 解析", cells["q10"].Feedback, superKernelCourse)
	mustContain(t, "ch4 q15", question(t, markdown, "### 第 15 题"), superKernelCourse, "`\"auto\"`", "**可选**")
	mustNotContain(t, "ch4 q15", question(t, markdown, "### 第 15 题"), "needs-static-graph")
	mustContain(t, "ch4 q17", question(t, markdown, "### 第 17 题"), superKernelCourse)
	for _, id := range []string{"ch1", "ch2", "ch3", "ch4", "ch5"} {
		cells, markdown := answerNotebook(t, id)
		for cid, c := range cells {
			mustNotContain(t, id+" "+cid, c.Feedback, "PR #")
		}
		for i, m := range markdown {
			mustNotContain(t, fmt.Sprintf("%s markdown cell %d", id, i), m, "PR #")
		}
	}
}

// ch2's version table is torch_npu's (Ascend/pytorch README.zh.md, 昇腾辅助软件);
// the TorchAir README has no such table. 26.0.0 (CANN 9.0.0) also ships with
// torch_npu 2.10.0.
func TestVersionTableIsTorchNPUs(t *testing.T) {
	t.Parallel()
	cells, markdown := answerNotebook(t, "ch2")
	mustContain(t, "ch2 setup", cells["setup"].Source, `"2.10.0": "26.0.0"`, `"26.0.0": "9.0.0"`, "Ascend/pytorch README")
	mustContain(t, "ch2 q2's 解析", cells["q2"].Feedback, "Ascend/pytorch README.zh.md", "2.10.0")
	mustContain(t, "ch2 q13", cells["q13"].Source, `("2.10.0+cpu", "2.10.0", "9.0.0")`)
	for cid, c := range cells {
		mustNotContain(t, "ch2 "+cid, c.Source+c.Feedback, "TorchAir README 版本配套表", "TorchAir 版本配套表")
	}
	mustNotContain(t, "ch2 q2", question(t, markdown, "## 第 2 题"), "TorchAir 版本配套表")
}
