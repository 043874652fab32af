package importer

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/notebook"
)

// A lab task (实验题) of the learning hub is open-ended: "对比两种模式在
// device 上的耗时，阐述 npugraph_ex 图模式的优化收益" asks for a run, a
// measurement and an explanation that no rule can grade. Its cell is
// therefore manual (metadata.grader.manual): a person grades it with a
// rubric made of the task's own steps. The hub writes those steps either
// as a numbered list under the task (02.03: "1. 编写并跑通 Eager …"; "2. …
// 采集 NPU Profiling …"; "3. 对比 … 阐述 … 收益") or as sentences
// (03.06, 04.07: "比较 …；记录 … 差异。"), per
// tutorials/TorchAir_development/*/NN.0x_chapter_practice.ipynb of
// hicann/cann-learning-hub, branch test.

var (
	// "1. 导入 torch_npu；", "   2. 打印结果。" (a step of the task).
	hubStepRe = regexp.MustCompile(`^\s*(?:\d{1,2}\s*[.．、)）]|[-*]\s)\s*(.+)$`)
	// Sentence ends inside an unnumbered task.
	hubClauseEnd = regexp.MustCompile(`[。；;]`)
	// Markup and markers that are not part of a step's words.
	hubLabNoise = regexp.MustCompile(`\*\*|【实验题】|[（(]\s*\d+(?:\.\d+)?\s*分\s*[)）]|\[([^\]]*)\]\([^)]*\)`)
)

// maxRubricText bounds a rubric item's text (runes): the item names the
// step; the task's full text is in the notebook.
const maxRubricText = 160

// labManual is a lab task's manual grading spec: an item per step, each
// worth the same share of the task's points (1 per step when the notebook
// gives none), so the items add up to the whole.
func labManual(it *hubItem, text string) notebook.ManualSpec {
	steps := labSteps(text)
	if len(steps) == 0 {
		steps = []string{"完成实验并说明结果"}
	}
	points := float64(len(steps))
	if it.pointsGiven {
		points = it.Points
	}
	// Equal shares in halves of a point, the last step taking the rest,
	// so a grader reads "+1.5", not "+1.6666666666666667".
	share := math.Floor(points/float64(len(steps))*2) / 2
	if share <= 0 {
		share = points / float64(len(steps))
	}
	spec := notebook.ManualSpec{Points: points}
	for i, st := range steps {
		p := share
		if i == len(steps)-1 {
			p = points - share*float64(len(steps)-1)
		}
		spec.Rubric = append(spec.Rubric, notebook.RubricItem{ID: fmt.Sprintf("step%d", i+1), Points: p, Text: st})
	}
	return spec
}

// labSteps are the steps of a lab task's markdown: its numbered or bulleted
// lines after the first (the task's own line), else the sentences of the task.
func labSteps(text string) []string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var steps []string
	for _, ln := range lines[1:] {
		if m := hubStepRe.FindStringSubmatch(ln); m != nil {
			if st := cleanStep(m[1]); st != "" {
				steps = append(steps, st)
			}
		}
	}
	if len(steps) > 0 {
		return steps
	}
	var prose []string
	for _, ln := range lines {
		if hubHeading.MatchString(ln) || hubRule.MatchString(ln) {
			continue
		}
		if m := hubItemRe.FindStringSubmatch(ln); m != nil {
			ln = m[3] // the task's number is not a step
		}
		prose = append(prose, ln)
	}
	for _, c := range hubClauseEnd.Split(strings.Join(prose, " "), -1) {
		if st := cleanStep(c); utf8.RuneCountInString(st) >= 4 {
			steps = append(steps, st)
		}
	}
	return steps
}

// cleanStep is a step's words: markup dropped (a link keeps its text),
// spaces and trailing punctuation trimmed, at most maxRubricText runes.
func cleanStep(s string) string {
	s = hubLabNoise.ReplaceAllString(s, "$1")
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimRight(s, "，,：:。；; ")
	if utf8.RuneCountInString(s) > maxRubricText {
		s = string([]rune(s)[:maxRubricText-1]) + "…"
	}
	return s
}
