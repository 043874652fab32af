package notebook

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/npugrade/npugrade/internal/domain"
)

// GraderMeta is the structural part of a cell's metadata.grader: which
// cell it is, whether it is graded, whether the learner writes it, and what
// it needs. The comparison keys are read by package compare.
type GraderMeta struct {
	ID       string             `json:"id"`
	Points   float64            `json:"points"`
	Solution bool               `json:"solution"`
	Starter  *string            `json:"starter"`
	Requires domain.Requirement `json:"requires"`
	Timeout  float64            `json:"timeout"`
	Probe    bool               `json:"probe"`
	// For is the question (graded cell id) a probe cell tests.
	For     string `json:"for"`
	Compare string `json:"compare"`
	// Group names an all-or-nothing group of graded cells.
	Group string `json:"group"`
	// Visibility of feedback details: visible (default), after_due_date, hidden.
	Visibility string `json:"visibility"`
	// Feedback is shown with the cell's verdict once the learner may see
	// its details (a quiz item's explanation, 解析).
	Feedback string `json:"feedback"`
	// Manual makes the cell manually graded: a person scores it against
	// its rubric; it is never compared automatically.
	Manual *ManualSpec `json:"manual"`
	// Otter is the Otter-Grader question a solution cell answers, for
	// matching a notebook filled in from Otter's student notebook.
	Otter string `json:"otter"`
	// Raw is the whole grader object, for the comparators.
	Raw json.RawMessage `json:"-"`
}

// Graded reports whether the cell's outputs earn points.
func (g GraderMeta) Graded() bool { return g.ID != "" && g.Points > 0 && g.Manual == nil }

// ManualSpec is metadata.grader.manual: the points a person may give and
// the rubric they give them with.
type ManualSpec struct {
	Points float64      `json:"points"`
	Rubric []RubricItem `json:"rubric"`
}

// RubricItem is one reusable rubric line: applying it adds Points
// (negative: takes them away). ID defaults to "r<position>" (from 1).
type RubricItem struct {
	ID     string  `json:"id,omitempty"`
	Points float64 `json:"points"`
	Text   string  `json:"text"`
}

// validate checks a manual spec and fills in the default item ids.
func (m *ManualSpec) validate(cellID string) error {
	var errs []string
	if cellID == "" {
		errs = append(errs, "a manual cell needs metadata.grader.id")
	}
	if !(m.Points > 0) || math.IsInf(m.Points, 0) {
		errs = append(errs, fmt.Sprintf("manual.points %v must be a positive number", m.Points))
	}
	seen := map[string]bool{}
	for i := range m.Rubric {
		it := &m.Rubric[i]
		if it.ID == "" {
			it.ID = fmt.Sprintf("r%d", i+1)
		}
		if !graderIDPattern.MatchString(it.ID) || seen[it.ID] {
			errs = append(errs, fmt.Sprintf("manual.rubric[%d].id %q: letters, digits, '-' and '_', once per rubric", i, it.ID))
		}
		seen[it.ID] = true
		if math.IsNaN(it.Points) || math.IsInf(it.Points, 0) || strings.TrimSpace(it.Text) == "" {
			errs = append(errs, fmt.Sprintf("manual.rubric[%d]: needs finite points and a text", i))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("metadata.grader.manual: %s", strings.Join(errs, "; "))
	}
	return nil
}

var graderIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Grader returns the cell's grader metadata; a cell without it returns the zero value.
func (c *Cell) Grader() (GraderMeta, error) {
	raw, ok := c.Metadata["grader"]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return GraderMeta{}, nil
	}
	if g, ok := graders.get(raw); ok {
		return g, nil
	}
	g, err := decodeGrader(raw)
	if err == nil {
		graders.put(raw, g)
	}
	return g, err
}

// graderErr is Grader's error, without copying a remembered grader
// for a caller: Parse only checks it, for every cell of every upload.
func (c *Cell) graderErr() error {
	raw, ok := c.Metadata["grader"]
	if !ok || len(raw) == 0 || string(raw) == "null" || graders.has(raw) {
		return nil
	}
	_, err := c.Grader()
	return err
}

// decodeGrader decodes and checks metadata.grader.
func decodeGrader(raw json.RawMessage) (GraderMeta, error) {
	var g GraderMeta
	if err := json.Unmarshal(raw, &g); err != nil {
		return GraderMeta{}, fmt.Errorf("metadata.grader: %w", err)
	}
	if g.ID != "" && !graderIDPattern.MatchString(g.ID) {
		return GraderMeta{}, fmt.Errorf("metadata.grader.id %q: only letters, digits, '-' and '_'", g.ID)
	}
	if g.Points < 0 {
		return GraderMeta{}, fmt.Errorf("metadata.grader.points %v is negative", g.Points)
	}
	if g.Manual != nil {
		if g.Points > 0 || g.Probe {
			return GraderMeta{}, fmt.Errorf("metadata.grader %q: a manual cell has no automatic points and is not a probe", g.ID)
		}
		if err := g.Manual.validate(g.ID); err != nil {
			return GraderMeta{}, err
		}
	}
	g.Raw = raw
	return g, nil
}

// graders remembers decoded grader metadata by its bytes: every upload
// of an exercise carries the same few dozen objects, and each is read
// again when the upload is rebuilt.
var graders = &graderMemo{seen: map[string]GraderMeta{}}

// graderMemo is a bounded map of decoded, valid grader metadata; when
// full it starts over. get hands out copies: nothing a caller changes
// reaches the memo.
type graderMemo struct {
	mu   sync.Mutex
	seen map[string]GraderMeta
}

const (
	maxMemoGraders     = 4096
	maxMemoGraderBytes = 4 << 10
)

func (m *graderMemo) get(raw json.RawMessage) (GraderMeta, bool) {
	if len(raw) > maxMemoGraderBytes {
		return GraderMeta{}, false
	}
	m.mu.Lock()
	g, ok := m.seen[string(raw)]
	m.mu.Unlock()
	if !ok {
		return GraderMeta{}, false
	}
	g = g.clone()
	g.Raw = raw
	return g, true
}

// has says raw is remembered (it decoded without an error).
func (m *graderMemo) has(raw json.RawMessage) bool {
	if len(raw) > maxMemoGraderBytes {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.seen[string(raw)]
	return ok
}

func (m *graderMemo) put(raw json.RawMessage, g GraderMeta) {
	if len(raw) > maxMemoGraderBytes {
		return
	}
	g = g.clone()
	g.Raw = nil
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) >= maxMemoGraders {
		clear(m.seen)
	}
	m.seen[string(raw)] = g
}

// clone copies what g points to.
func (g GraderMeta) clone() GraderMeta {
	if g.Starter != nil {
		s := *g.Starter
		g.Starter = &s
	}
	if g.Manual != nil {
		m := *g.Manual
		m.Rubric = slices.Clone(m.Rubric)
		g.Manual = &m
	}
	return g
}

// MustGrader is Grader for notebooks already validated by Parse.
func (c *Cell) MustGrader() GraderMeta {
	g, _ := c.Grader()
	return g
}

// Tags returns metadata.tags.
func (c *Cell) Tags() []string {
	var tags []string
	if raw, ok := c.Metadata["tags"]; ok {
		_ = json.Unmarshal(raw, &tags)
	}
	return tags
}

// AddTag adds a tag if it is not there yet.
func (c *Cell) AddTag(tag string) {
	tags := c.Tags()
	for _, t := range tags {
		if t == tag {
			return
		}
	}
	tags = append(tags, tag)
	b, _ := json.Marshal(tags)
	if c.Metadata == nil {
		c.Metadata = map[string]json.RawMessage{}
	}
	c.Metadata["tags"] = b
}

// NotebookDefaults returns the notebook-level metadata.grader (comparison defaults).
func (nb *Notebook) NotebookDefaults() json.RawMessage {
	return nb.Metadata["grader"]
}

// ClearOutputs removes every output and execution count.
func (nb *Notebook) ClearOutputs() {
	for _, c := range nb.Cells {
		if c.CellType == "code" {
			c.Outputs = []*Output{}
			c.ExecutionCount = nil
		} else {
			c.Outputs = nil
		}
	}
}

// CellByGraderID returns the first cell whose grader id is id.
func (nb *Notebook) CellByGraderID(id string) *Cell {
	for _, c := range nb.Cells {
		if c.MustGrader().ID == id {
			return c
		}
	}
	return nil
}

// StripVolatile copies outputs without what never takes part in a
// comparison (execution counts, tracebacks with their paths, metadata), so
// recorded references stay small and diff cleanly in review.
func StripVolatile(outs []*Output) []*Output {
	res := make([]*Output, 0, len(outs))
	for _, o := range outs {
		c := *o
		c.ExecutionCount = nil
		c.Traceback = nil
		c.Metadata = nil
		res = append(res, &c)
	}
	return res
}
