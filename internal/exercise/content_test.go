package exercise_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/exercise"
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

// ch2 reads torch._dynamo.utils.counters["npugraph_ex"], which only the
// 26.0.0 npugraph_ex writes (26.0.0
// npugraph_ex/npugraph_ex/_acl_concrete_graph/acl_graph.py,
// compile_for_graph_key and reset_captured_graph); 7.3.0's
// python/torchair/_acl_concrete_graph/acl_graph.py has no such counter,
// so on a 7.3.0 runner captured_total() is always 0 and those cells print
// other results. Every graded cell that depends on it (directly, or
// through capture_trace, whose trace holds captured_total()) runs only
// where the count exists: on the cpu profile, whose npugraph_ex stand-in
// behaves as 26.0.0 and records captured_graph_N, and on NPU runners with
// TorchAir >= 26.0.0 (a twin cell with the same source). A 7.3.0 runner
// runs neither.
func TestCaptureCountCellsNeed26(t *testing.T) {
	t.Parallel()
	ex, err := exercise.LoadOne(filepath.Join("..", "..", "exercises", "ch2"), filepath.Join("..", "..", "answers", "ch2"))
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := answerNotebook(t, "ch2")
	mustContain(t, "ch2 setup", cells["setup"].Source, "26.0.0 npugraph_ex/npugraph_ex/_acl_concrete_graph/acl_graph.py", "7.3.0 上它总是 0")

	cpuEnv := envprobe.Validate(envprobe.Report{Arch: "x86_64", Python: "3.13.5", Torch: "2.6.0+debian", NPUGraphExBackend: true})
	npu := func(torchNPU, cann string) envprobe.Report {
		return envprobe.Validate(envprobe.Report{Arch: "aarch64", Python: "3.11.6", Torch: strings.SplitN(torchNPU, ".post", 2)[0],
			TorchNPU: torchNPU, CANN: cann, DeviceName: "Ascend910B3", DeviceCount: 1, Driver: "25.2.0", NPUGraphExBackend: true})
	}
	r730, r26 := npu("2.8.0.post2", "8.5.0"), npu("2.8.0.post4", "9.0.0")
	if r730.TorchAirRelease != "7.3.0" || r26.TorchAirRelease != "26.0.0" || r730.Profile != envprobe.ProfileNPUA2 {
		t.Fatalf("test reports: %s %s %s", r730.TorchAirRelease, r26.TorchAirRelease, r730.Profile)
	}
	runs := func(r envprobe.Report, q domain.Requirement) bool { ok, _ := r.Satisfies(q); return ok }

	dependent := map[string]bool{}
	for _, g := range ex.Graded {
		src := cells[g.ID].Source
		if strings.Contains(src, "captured_total(") || strings.Contains(src, `counters["npugraph_ex"]`) || strings.Contains(src, "capture_trace(") {
			dependent[g.ID] = true
		}
	}
	for _, want := range []string{"q14-probe", "q14-probe-npu", "q15", "q15-npu", "q15-probe", "q15-probe-npu"} {
		if !dependent[want] {
			t.Errorf("ch2 %s should be a graded cell that reads the capture count", want)
		}
	}
	for _, g := range ex.Graded {
		if !dependent[g.ID] {
			continue
		}
		if runs(r730, g.Requires) {
			t.Errorf("ch2 %s (requires %+v) runs on a TorchAir 7.3.0 runner, which has no counters[\"npugraph_ex\"]", g.ID, g.Requires)
		}
		onCPU, _ := domain.CPUMatcher(g.Requires)
		switch {
		case runs(cpuEnv, g.Requires) && onCPU && !runs(r26, g.Requires):
			twin := g.ID + "-npu"
			if cells[twin].Source != cells[g.ID].Source {
				t.Errorf("ch2 %s has no NPU twin %s with the same source", g.ID, twin)
			}
		case runs(r26, g.Requires) && !onCPU && !runs(cpuEnv, g.Requires):
			if !strings.HasSuffix(g.ID, "-npu") || !dependent[strings.TrimSuffix(g.ID, "-npu")] {
				t.Errorf("ch2 %s runs on TorchAir 26.0.0 but is no twin of a cpu cell", g.ID)
			}
		default:
			t.Errorf("ch2 %s (requires %+v) is gated neither to the cpu stand-in nor to TorchAir >= 26.0.0 only", g.ID, g.Requires)
		}
	}
	// Each runner counts q15 once, and a 7.3.0 runner not at all.
	q15 := func(r envprobe.Report) (n int) {
		for _, g := range ex.Graded {
			if (g.ID == "q15" || g.ID == "q15-npu") && runs(r, g.Requires) {
				n++
			}
		}
		return n
	}
	if q15(cpuEnv) != 1 || q15(r26) != 1 || q15(r730) != 0 {
		t.Errorf("q15 is counted cpu %d, 26.0.0 %d, 7.3.0 %d times; want 1, 1, 0", q15(cpuEnv), q15(r26), q15(r730))
	}
	if got := ex.MaxPoints(func(q domain.Requirement) bool { return runs(r730, q) }); got >= ex.MaxPoints(func(q domain.Requirement) bool { return runs(r26, q) }) {
		t.Errorf("a 7.3.0 runner's maximum (%g) should lack the capture-count cells", got)
	}
}

// The lab tasks for topics the course teaches but nothing graded (reading
// a profiler trace, register_replacement written by the learner, what
// static-kernel compilation produces and when its cache hits, what
// readable_cache checks and writes) each cite
// the released file they follow, have a hidden probe and a fixture that
// hard-codes the visible outputs.
func TestLabTasksCiteReleasesAndHaveProbes(t *testing.T) {
	t.Parallel()
	tasks := []struct {
		ex, q, heading string
		cites          []string
	}{
		{"ch2", "q20", "## 第 20 题", []string{"02_quick_start/answer/02.03_answer.ipynb", "eager_prof.json", "Ascend Hardware"}},
		{"ch3", "q17", "### 第 17 题", []string{"26.0.0 npugraph_ex/npugraph_ex/patterns/pattern_pass_manager.py",
			"7.3.0 的同名封装在 python/torchair/patterns/pattern_pass_manager.py", "skip_duplicates"}},
		{"ch4", "q18", "### 第 18 题", []string{"26.0.0 npugraph_ex/npugraph_ex/_acl_concrete_graph/static_kernel.py",
			"_check_for_load_run_pkg", "_find_and_install_run_pkgs", "7.3.0 python/torchair/_acl_concrete_graph/static_kernel.py",
			"docs/zh/npugraph_ex/basic/static_kernel_compile.md"}},
		{"ch4", "q20", "### 第 20 题", []string{"7.3.0 python/torchair/inference/_cache_compiler.py",
			"26.0.0 npugraph_ex/npugraph_ex/inference/_cache_compiler.py", "readable_cache", "_validate_owner_and_permissions"}},
	}
	for _, tt := range tasks {
		cells, markdown := answerNotebook(t, tt.ex)
		mustContain(t, tt.ex+" "+tt.q, question(t, markdown, tt.heading), tt.cites...)
		for _, id := range []string{tt.q + "-impl", tt.q, tt.q + "-probe"} {
			if _, ok := cells[id]; !ok {
				t.Errorf("%s has no cell %s", tt.ex, id)
			}
		}
		mustContain(t, tt.ex+" "+tt.q+"-probe", cells[tt.q+"-probe"].Source, "NPUGRADE_SEED")
		fixture := filepath.Join("..", "..", "answers", tt.ex, "fixtures", "hardcoded-"+tt.q+".expected.json")
		raw, err := os.ReadFile(fixture)
		if err != nil {
			t.Errorf("%s %s: no hard-coding fixture: %v", tt.ex, tt.q, err)
			continue
		}
		var exp struct{ Cells map[string]string }
		if err := json.Unmarshal(raw, &exp); err != nil || exp.Cells[tt.q+"-probe"] == "pass" || exp.Cells[tt.q+"-probe"] == "" {
			t.Errorf("%s: the hard-coding fixture's probe must fail, got %q (%v)", fixture, exp.Cells[tt.q+"-probe"], err)
		}
	}
}
