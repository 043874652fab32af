package notebook

import "encoding/json"

// LearnerCopy is what a learner may download of their own executed
// notebook: the probe cells (hidden tests, which the server adds) are
// removed, the probe seed and the answer's grading defaults are dropped
// from the notebook metadata, every cell's grader metadata is cut down as
// the starter's is (the locked cells come from the answer, with their
// explanations and rules), and the outputs of graded cells whose details
// the learner may not see yet (visible(id) false) are cleared. nb is not
// changed.
func LearnerCopy(nb *Notebook, visible func(graderID string) bool) *Notebook {
	out := nb.Clone()
	delete(out.Metadata, SeedMetaKey)
	delete(out.Metadata, "grader")
	cells := out.Cells[:0]
	for _, c := range out.Cells {
		g := c.MustGrader()
		if g.Probe {
			continue
		}
		if learnerGrader(c) != nil {
			delete(c.Metadata, "grader") // unreadable: keep nothing of it
		}
		if g.ID != "" && !visible(g.ID) {
			c.Outputs, c.ExecutionCount = nil, nil
		}
		cells = append(cells, c)
	}
	out.Cells = cells
	if out.hasIDs() {
		out.AssignIDs() // nbformat 4.5 needs an id on the new cells too
	}
	return out
}

// WithFeedback returns nb with a Markdown cell after each cell whose
// grader id has an entry in feedback (as nbgrader's feedback notebooks
// do); the text is the caller's, already in the reader's language.
func WithFeedback(nb *Notebook, feedback map[string]string) *Notebook {
	out := nb.Clone()
	cells := make([]*Cell, 0, len(out.Cells)+len(feedback))
	for _, c := range out.Cells {
		cells = append(cells, c)
		if text, ok := feedback[c.MustGrader().ID]; ok && c.MustGrader().ID != "" {
			cells = append(cells, &Cell{CellType: "markdown", Source: MultilineString(text),
				Metadata: map[string]json.RawMessage{"npugrade_feedback": json.RawMessage(`true`)}})
		}
	}
	out.Cells = cells
	if out.hasIDs() {
		out.AssignIDs() // nbformat 4.5 needs an id on the new cells too
	}
	return out
}
