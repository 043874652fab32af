package importer_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

// labRubric is a lab cell's manual spec as "id:points:text" lines.
func labRubric(t *testing.T, nb *notebook.Notebook, id string) (float64, []string) {
	t.Helper()
	c := nb.CellByGraderID(id)
	if c == nil {
		t.Fatalf("no cell %s", id)
	}
	g, err := c.Grader() // validates the manual spec as the exercise loader does
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if g.Manual == nil || g.Graded() {
		t.Fatalf("%s is not a manual cell: %+v", id, g)
	}
	var items []string
	sum := 0.0
	for _, it := range g.Manual.Rubric {
		items = append(items, fmt.Sprintf("%s:%g:%s", it.ID, it.Points, it.Text))
		sum += it.Points
	}
	if sum != g.Manual.Points {
		t.Errorf("%s: the rubric adds up to %g of %g points", id, sum, g.Manual.Points)
	}
	return g.Manual.Points, items
}

// TestImportHubLabTasksAreManual: each lab task (实验题) of a hub notebook
// becomes a manual cell whose rubric has an item per step of the task:
// its numbered steps, else its sentences; 1 point a step unless the
// notebook gives the task's points, then shared out in halves.
func TestImportHubLabTasksAreManual(t *testing.T) {
	t.Parallel()
	nb, rep, err := importer.ImportHub(hubSource(t, "tutorial/02_labs/02.04_chapter_practice.ipynb", "02.04"))
	if err != nil {
		t.Fatal(err)
	}
	pts, items := labRubric(t, nb, "lab2")
	if want := []string{"step1:1:导入 torch_npu", "step2:1:打印结果"}; pts != 2 || strings.Join(items, "|") != strings.Join(want, "|") {
		t.Errorf("lab2 (numbered steps): %g %q", pts, items)
	}
	pts, items = labRubric(t, nb, "lab")
	if pts != 1 || len(items) != 1 || items[0] != "step1:1:比较在 CPU 和 NPU 上做 1000 次小矩阵乘法的耗时，记录差异" {
		t.Errorf("lab (one sentence): %g %q", pts, items)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "lab2: lab task -> solution cell on an NPU, graded by hand: 2 points, a rubric item per step (2)") {
		t.Errorf("report notes: %q", rep.Notes)
	}

	// Points from the heading, shared out; sentences as steps; markup and
	// links reduced to their words.
	md := "### 四、实验题（每题 5 分）\n\n" +
		"7. 【实验题】在 **固定 Shape** 的模型上开启编译缓存；分别记录首次与二次运行的耗时。对比两次的差异，参考 [缓存说明](https://example.invalid/c)。\n"
	src, _ := json.Marshal(map[string]any{"nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{},
		"cells": []map[string]any{{"cell_type": "markdown", "id": "m", "metadata": map[string]any{}, "source": md}}})
	nb, _, err = importer.ImportHub(importer.HubSource{Notebook: src})
	if err != nil {
		t.Fatal(err)
	}
	pts, items = labRubric(t, nb, "lab7")
	want := []string{"step1:1.5:在 固定 Shape 的模型上开启编译缓存", "step2:1.5:分别记录首次与二次运行的耗时", "step3:2:对比两次的差异，参考 缓存说明"}
	if pts != 5 || strings.Join(items, "|") != strings.Join(want, "|") {
		t.Errorf("lab7 (5 points, sentences): %g\n%q\nwant %q", pts, items, want)
	}
}
