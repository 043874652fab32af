package notebook

import (
	"regexp"
	"strings"
)

// An exercise imported from Otter-Grader keeps each solution cell's Otter
// question (metadata.grader.otter). A learner who filled in Otter's own
// student notebook uploads it as it is: no grader metadata, no cell ids
// of ours, a grader.check("q1") cell after each autograded question's
// answer and each manual question between "<!-- BEGIN QUESTION -->" and
// "<!-- END QUESTION -->" Markdown. Otter grades such a notebook by
// running it whole; here its answers are found by that layout and put in
// the template's solution cells, and the template's tests run.

var (
	otterCheck      = regexp.MustCompile(`^grader\.check\(\s*["']([^"']+)["']\s*\)\s*;?$`)
	otterBeginBlock = "<!-- BEGIN QUESTION -->"
	otterEndBlock   = "<!-- END QUESTION -->"
)

// otterQuestion is one question of the template: its solution cells.
type otterQuestion struct {
	name   string
	manual bool
	cells  []int // template cell indexes, in order
}

// otterQuestions lists the template's Otter questions in notebook order.
func (t *Template) otterQuestions() []otterQuestion {
	var qs []otterQuestion
	at := map[string]int{}
	for i, g := range t.graders {
		if g.Otter == "" || !g.Solution {
			continue
		}
		k, ok := at[g.Otter]
		if !ok {
			k = len(qs)
			at[g.Otter] = k
			qs = append(qs, otterQuestion{name: g.Otter})
		}
		qs[k].cells = append(qs[k].cells, i)
		qs[k].manual = qs[k].manual || g.Manual != nil
	}
	return qs
}

// otterAnswers finds the answers of an upload laid out as Otter's student
// notebook: per template cell index, the learner's cell. ok is false when
// the upload is not such a notebook (it has grader metadata of its own, or
// no Otter check cell or question block).
func (t *Template) otterAnswers(upload *Notebook) (map[int]*Cell, bool) {
	if !t.otter {
		return nil, false
	}
	for _, c := range upload.Cells {
		if c.MustGrader().ID != "" {
			return nil, false
		}
	}
	found := map[string][]*Cell{}
	claimed := make([]bool, len(upload.Cells))
	seen := false
	for i, c := range upload.Cells {
		m := otterCheck.FindStringSubmatch(strings.TrimSpace(string(c.Source)))
		if c.CellType != "code" || m == nil {
			continue
		}
		seen = true
		// The answer is the run of code cells right above the check.
		start := i
		for start > 0 && upload.Cells[start-1].CellType == "code" && !claimed[start-1] &&
			!otterCheck.MatchString(strings.TrimSpace(string(upload.Cells[start-1].Source))) {
			start--
		}
		for k := start; k < i; k++ {
			claimed[k] = true
		}
		claimed[i] = true
		if _, dup := found[m[1]]; !dup {
			found[m[1]] = upload.Cells[start:i]
		}
	}
	var blocks [][]*Cell
	for i := 0; i < len(upload.Cells); i++ {
		c := upload.Cells[i]
		if c.CellType != "markdown" || !strings.Contains(string(c.Source), otterBeginBlock) {
			continue
		}
		seen = true
		var block []*Cell
		j := i + 1
		for ; j < len(upload.Cells); j++ {
			d := upload.Cells[j]
			if d.CellType == "markdown" && strings.Contains(string(d.Source), otterEndBlock) {
				break
			}
			if !claimed[j] && strings.TrimSpace(string(d.Source)) != "" {
				block = append(block, d)
			}
		}
		if len(block) > 0 {
			blocks = append(blocks, block)
		}
		i = j
	}
	if !seen {
		return nil, false
	}
	out := map[int]*Cell{}
	for _, q := range t.otterQuestions() {
		cells, ok := found[q.name]
		if !ok && q.manual && len(blocks) > 0 {
			cells, blocks, ok = blocks[0], blocks[1:], true
		}
		if !ok {
			continue // deleted: restored from the template, as any missing answer
		}
		t.placeOtterAnswer(q, cells, out)
	}
	return out, true
}

// placeOtterAnswer puts a question's answer cells into its template
// solution cells: one each when the numbers agree, else all of them,
// joined, into the first of the cells' type (the others left empty).
func (t *Template) placeOtterAnswer(q otterQuestion, cells []*Cell, out map[int]*Cell) {
	if len(cells) == len(q.cells) {
		for k, i := range q.cells {
			out[i] = cells[k]
		}
		return
	}
	first := q.cells[0]
	want := t.nb.Cells[first].CellType
	var parts []string
	for _, c := range cells {
		if c.CellType == want {
			parts = append(parts, strings.TrimRight(string(c.Source), "\n"))
		}
	}
	out[first] = &Cell{CellType: want, Source: MultilineString(strings.Join(parts, "\n\n"))}
	for _, i := range q.cells[1:] {
		out[i] = &Cell{CellType: t.nb.Cells[i].CellType}
	}
}
