package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/npugrade/npugrade/internal/notebook"
)

// HubSource is what one learning-hub exercise is made from: a section or
// chapter-practice notebook of hicann/cann-learning-hub
// (tutorials/TorchAir_development/NN_*/NN.0x_*.ipynb), its answer text
// (answer/NN.0x_answer.txt) and, for lab tasks, its answer notebook
// (answer/NN.0x_answer.ipynb).
type HubSource struct {
	Notebook   []byte
	AnswerText string
	// Lab is the lab answer notebook; nil when there is none.
	Lab []byte
}

// hubItem is one quiz item found in the notebook's markdown.
type hubItem struct {
	N      int // 0: an unnumbered lab task
	Kind   string
	Points float64
	// pointsGiven: Points come from the notebook ("每题 N 分", "（N 分）"),
	// not the default.
	pointsGiven bool
	answer      *HubAnswer
}

func (it *hubItem) gradeID() string {
	if it.Kind == KindLab {
		if it.N == 0 {
			return "lab"
		}
		return fmt.Sprintf("lab%d", it.N)
	}
	return fmt.Sprintf("q%d", it.N)
}

var (
	// "1. **（判断题）** …", "(1)【单选题】…", "**（1）【单选题】 …**", "19. 【实验题】…".
	hubItemRe  = regexp.MustCompile(`^\s*(?:\*\*)?\s*(?:(\d{1,3})\s*[.．、]|[（(]\s*(\d{1,3})\s*[)）])\s*(.*)$`)
	hubKindRe  = regexp.MustCompile(`[（(【\[]\s*` + kindPattern + `\s*[)）】\]]`)
	hubHeading = regexp.MustCompile(`^\s{0,3}#{1,6}\s`)
	hubRule    = regexp.MustCompile(`^\s*(?:-{3,}|\*{3,}|_{3,})\s*$`)
	hubEach    = regexp.MustCompile(`每题\s*(\d+(?:\.\d+)?)\s*分`)
	hubOwn     = regexp.MustCompile(`[（(]\s*(\d+(?:\.\d+)?)\s*分\s*[)）]`)
	// Lines that point learners to the answers, which they no longer get:
	// "运行以下代码单元查看参考答案与解析", "[实验题参考代码](./answer/…)".
	hubReveal   = regexp.MustCompile(`运行.{0,12}(?:代码|单元).{0,20}(?:答案|解析)|\]\(\.?/?answer/`)
	hubLabTitle = regexp.MustCompile(`实验\s*(\d{1,3})`)
)

// hubScan is the state of the walk over the notebook's markdown: the
// section heading in force ("### 一、判断题（每题 5 分）") and the item the
// current line belongs to.
type hubScan struct {
	kind   string
	points float64
	item   *hubItem
	items  []*hubItem
	// labSeen: the section's unnumbered lab task has started.
	labSeen bool
}

// segment is a run of markdown lines: free text (item nil) or one item.
type segment struct {
	lines []string
	item  *hubItem
}

// line classifies one markdown line, starting a new segment when an item
// starts or ends. It returns the segment the line goes to (nil: dropped).
func (s *hubScan) line(raw string, segs []*segment) ([]*segment, *segment) {
	ln := strings.TrimRight(raw, "\r\n")
	cur := func() *segment {
		if len(segs) == 0 || segs[len(segs)-1].item != nil {
			segs = append(segs, &segment{})
		}
		return segs[len(segs)-1]
	}
	switch {
	case hubReveal.MatchString(ln):
		s.item = nil // "运行以下代码单元查看参考答案": that cell is dropped
		return segs, nil
	case hubHeading.MatchString(ln):
		s.item, s.kind, s.points, s.labSeen = nil, "", 0, false
		if m := hubKindRe.FindStringSubmatch(ln); m != nil {
			s.kind = m[1]
		} else if k := bareKind(ln); k != "" {
			s.kind = k
		}
		if m := hubEach.FindStringSubmatch(ln); m != nil {
			s.points, _ = strconv.ParseFloat(m[1], 64)
		}
		seg := cur()
		return segs, seg
	case hubRule.MatchString(ln):
		s.item = nil
		seg := cur()
		return segs, seg
	}
	if it := s.startItem(ln); it != nil {
		s.item = it
		s.items = append(s.items, it)
		segs = append(segs, &segment{item: it})
		return segs, segs[len(segs)-1]
	}
	if s.item != nil {
		return segs, segs[len(segs)-1]
	}
	seg := cur()
	return segs, seg
}

// startItem reports whether ln starts a quiz item: a numbered line with a
// kind marker, or any numbered line under a kind heading, or, under a 实验题
// heading, the task's first line (the hub leaves single lab tasks unnumbered).
// Numbered lines inside a lab task are its steps, not new items.
func (s *hubScan) startItem(ln string) *hubItem {
	m := hubItemRe.FindStringSubmatch(ln)
	inLab := s.item != nil && s.item.Kind == KindLab
	if m == nil {
		if s.kind == KindLab && s.item == nil && !s.labSeen && strings.TrimSpace(ln) != "" {
			s.labSeen = true
			return &hubItem{Kind: KindLab, Points: s.points, pointsGiven: s.points > 0}
		}
		return nil
	}
	n, _ := strconv.Atoi(m[1] + m[2])
	kind := s.kind
	if k := hubKindRe.FindStringSubmatch(m[3]); k != nil {
		kind = k[1]
	} else if inLab || kind == "" {
		return nil
	}
	points := s.points
	if p := hubOwn.FindStringSubmatch(m[3]); p != nil {
		points, _ = strconv.ParseFloat(p[1], 64)
	}
	given := points > 0
	if !given {
		points = 1
	}
	return &hubItem{N: n, Kind: kind, Points: points, pointsGiven: given}
}

// bareKind finds a kind named without brackets in a heading ("### 二、单选题").
func bareKind(heading string) string {
	for _, k := range []string{KindJudge, KindSingle, KindMulti, KindLab} {
		if strings.Contains(heading, k) {
			return k
		}
	}
	return ""
}

// ImportHub makes the answer notebook of a learning-hub exercise: the
// notebook's cells as they are, the cell that prints the answer file
// dropped, and after each quiz item a solution cell "qN = None" and a
// locked check cell graded with compare "choice" (points from "每题 N 分",
// else 1; the item's 解析 as feedback). A lab task (实验题) gets an
// ungraded solution cell with its reference code, to run on an NPU. Every
// problem (an item without an answer, an answer without an item, a kind
// that differs, an answer that cannot be read) is returned at once, and
// then no notebook.
func ImportHub(src HubSource) (*notebook.Notebook, Report, error) {
	rep := Report{Formats: []string{"learning-hub"}}
	nb, err := notebook.Parse(src.Notebook, notebook.Limits{})
	if err != nil {
		return nil, rep, fmt.Errorf("notebook: %w", err)
	}
	answers, aerrs := ParseHubAnswers(src.AnswerText)
	errs := multierror.Append(nil, aerrs...)
	var scan hubScan
	cells := splitHubCells(nb, &scan, &rep)
	labCode, err := hubLabCode(src.Lab)
	if err != nil {
		errs = multierror.Append(errs, err)
	}
	errs = multierror.Append(errs, matchHub(scan.items, answers)...)
	if len(scan.items) == 0 {
		errs = multierror.Append(errs, errors.New("the notebook has no quiz items (numbered 判断题/单选题/多选题/实验题)"))
	}
	if err := errs.ErrorOrNil(); err != nil {
		return nil, rep, err
	}
	used := map[string]bool{}
	for _, c := range cells {
		used[c.cell.ID] = c.cell.ID != ""
	}
	var out []*notebook.Cell
	for _, c := range cells {
		if c.item == nil {
			out = append(out, c.cell)
			continue
		}
		c.cell.ID = uniqueID(used, c.item.gradeID()+"-md")
		out = append(out, c.cell)
		out = append(out, hubCells(c.item, string(c.cell.Source), labCode, used, &rep)...)
	}
	nb.Cells = out
	nb.AssignIDs()
	return nb, rep, nil
}

// hubCell is a cell of the split notebook: item is set on the markdown
// cell of a quiz item, after which the generated cells go.
type hubCell struct {
	cell *notebook.Cell
	item *hubItem
}

// splitHubCells splits markdown cells at quiz items, so each item can be
// followed by its answer and check cells; a cell without items is kept
// whole (id, metadata, attachments). The answer-printing code cell and the
// lines that point to it are dropped.
func splitHubCells(nb *notebook.Notebook, scan *hubScan, rep *Report) []hubCell {
	var out []hubCell
	for _, c := range nb.Cells {
		if c.CellType == "code" && strings.Contains(string(c.Source), "_answer.txt") {
			rep.note("%s: the cell that prints the answer file is dropped", c.ID)
			continue
		}
		if c.CellType != "markdown" {
			out = append(out, hubCell{cell: c})
			continue
		}
		var segs []*segment
		scan.item = nil // an item ends with its cell
		for _, ln := range strings.SplitAfter(string(c.Source), "\n") {
			var seg *segment
			segs, seg = scan.line(ln, segs)
			if seg != nil {
				seg.lines = append(seg.lines, ln)
			}
		}
		hasItem := false
		for _, s := range segs {
			hasItem = hasItem || s.item != nil
		}
		if !hasItem && len(segs) == 1 && strings.Join(segs[0].lines, "") == string(c.Source) {
			out = append(out, hubCell{cell: c})
			continue
		}
		out = append(out, segmentCells(c, segs)...)
	}
	return out
}

func segmentCells(c *notebook.Cell, segs []*segment) []hubCell {
	var out []hubCell
	first := true
	for k, s := range segs {
		text := strings.Join(s.lines, "")
		if s.item == nil && strings.TrimSpace(text) == "" {
			continue
		}
		cell := &notebook.Cell{CellType: "markdown", Metadata: map[string]json.RawMessage{},
			Source: notebook.MultilineString(strings.TrimRight(text, "\n"))}
		if s.item == nil && first {
			cell.ID, cell.Metadata, cell.Attachments = c.ID, c.Metadata, c.Attachments
			first = false
		} else if s.item == nil && c.ID != "" {
			cell.ID = fmt.Sprintf("%s-%d", c.ID, k+1)
		}
		out = append(out, hubCell{cell: cell, item: s.item})
	}
	return out
}

// matchHub pairs the notebook's items with the answer text's, by number
// (an unnumbered lab task with the unnumbered one), and lists every item
// without an answer, answer without an item, and kind that differs.
func matchHub(items []*hubItem, answers []HubAnswer) []error {
	byN := map[int]*HubAnswer{}
	for i := range answers {
		byN[answers[i].N] = &answers[i]
	}
	var errs []error
	seen := map[int]bool{}
	for _, it := range items {
		a := byN[it.N]
		switch {
		case seen[it.N]:
			errs = append(errs, fmt.Errorf("notebook: item %s (%s) appears twice", itemName(it.N), it.Kind))
		case a == nil && it.Kind == KindLab:
			// Lab tasks are not graded automatically; their reference is
			// the lab answer notebook, which the answer text may not list.
		case a == nil:
			errs = append(errs, fmt.Errorf("notebook: item %s (%s) has no answer in the answer text", itemName(it.N), it.Kind))
		case a.Kind != it.Kind:
			errs = append(errs, fmt.Errorf("item %s is a %s in the notebook but a %s in the answer text (line %d)", itemName(it.N), it.Kind, a.Kind, a.Line))
		default:
			it.answer = a
		}
		seen[it.N] = true
	}
	var nums []int
	for n := range byN {
		if !seen[n] {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		a := byN[n]
		errs = append(errs, fmt.Errorf("answer text line %d: answer %s (%s) has no question in the notebook", a.Line, itemName(n), a.Kind))
	}
	return errs
}

// hubHints tell the learner how to write each kind of answer.
var hubHints = map[string]string{
	KindJudge:  `判断题：填 "√"（正确）或 "×"（错误）`,
	KindSingle: `单选题：填一个字母，如 "B"`,
	KindMulti:  `多选题：填所有正确选项的字母，如 "AB"`,
}

// hubCells are the cells after one item (text: its markdown): answer and
// check for a quiz item, a manually graded NPU cell for a lab task.
func hubCells(it *hubItem, text string, labCode map[int]string, used map[string]bool, rep *Report) []*notebook.Cell {
	id := it.gradeID()
	a := it.answer
	if it.Kind == KindLab {
		code := labCode[it.N]
		if code == "" && len(labCode) == 1 {
			for _, c := range labCode {
				code = c
			}
		}
		if code == "" && a != nil && a.Idea != "" {
			code = "# 参考思路：\n" + commentLines(a.Idea)
			rep.note("%s: no reference code in the lab answer notebook; its 参考思路 is the reference", id)
		}
		starter := "# 实验题：需在昇腾 NPU 上运行；不自动评分（由教师按评分细则评阅）\n# YOUR CODE HERE"
		manual := labManual(it, text)
		g := map[string]any{"id": uniqueID(used, id), "solution": true, "starter": starter, "requires": map[string]string{"accelerator": "npu"},
			"manual": manual}
		rep.note("%s: lab task -> solution cell on an NPU, graded by hand: %g points, a rubric item per step (%d)",
			id, manual.Points, len(manual.Rubric))
		return []*notebook.Cell{codeCell(g, notebook.BeginSolution+"\n"+strings.TrimRight(code, "\n")+"\n"+notebook.EndSolution)}
	}
	implID := uniqueID(used, id+"-impl")
	checkID := uniqueID(used, id)
	impl := codeCell(map[string]any{"id": implID, "solution": true, "starter": fmt.Sprintf("%s = None  # %s", id, hubHints[it.Kind])},
		fmt.Sprintf("%s\n%s = %q\n%s", notebook.BeginSolution, id, a.Answer, notebook.EndSolution))
	g := map[string]any{"id": checkID, "points": it.Points, "compare": "choice", "show_expected": true, "visibility": "after_due_date"}
	if a.Explanation != "" {
		g["feedback"] = "解析：" + a.Explanation
	}
	rep.note("%s: %s, answer %s, %g points -> solution cell and graded check cell", checkID, it.Kind, a.Answer, it.Points)
	return []*notebook.Cell{impl, codeCell(g, fmt.Sprintf("print(%q, %s)", id+":", id))}
}

func codeCell(grader map[string]any, src string) *notebook.Cell {
	b, _ := json.Marshal(grader)
	return &notebook.Cell{ID: grader["id"].(string), CellType: "code", Source: notebook.MultilineString(src),
		Metadata: map[string]json.RawMessage{"grader": b}, Outputs: []*notebook.Output{}}
}

func commentLines(s string) string {
	var b strings.Builder
	for _, ln := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString("# " + ln + "\n")
	}
	return b.String()
}

// hubLabCode reads the lab answer notebook: the code cells under a heading
// naming "实验 N" belong to lab task N; code before any such heading
// belongs to the unnumbered task (key 0).
func hubLabCode(raw []byte) (map[int]string, error) {
	code := map[int]string{}
	if raw == nil {
		return code, nil
	}
	nb, err := notebook.Parse(raw, notebook.Limits{})
	if err != nil {
		return nil, fmt.Errorf("lab answer notebook: %w", err)
	}
	n := 0
	for _, c := range nb.Cells {
		switch c.CellType {
		case "markdown":
			if m := hubLabTitle.FindStringSubmatch(string(c.Source)); m != nil {
				n, _ = strconv.Atoi(m[1])
			}
		case "code":
			if strings.TrimSpace(string(c.Source)) == "" {
				continue
			}
			if code[n] != "" {
				code[n] += "\n\n"
			}
			code[n] += strings.TrimRight(string(c.Source), "\n")
		}
	}
	return code, nil
}
