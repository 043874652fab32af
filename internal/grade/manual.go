package grade

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
)

// Manual grading: a person scores a manual cell (metadata.grader.manual)
// with its rubric, or overrides any cell's points. This file holds the
// arithmetic; the store writes each decision with the new score in one
// transaction.

// ManualInput is a person's grade of one manual cell.
type ManualInput struct {
	// Items are the ids of the rubric items that apply.
	Items []string `json:"items"`
	// Adjustment is added to the items' sum (positive or negative).
	Adjustment float64 `json:"adjustment"`
	// Comment is shown to the learner with the cell's feedback.
	Comment string `json:"comment"`
}

// maxComment bounds a grader's comment or an override's reason (bytes).
const maxComment = 20000

// ManualPoints is what a manual cell earns with items applied and an
// adjustment: the items' points added to a start of 0, or to the full
// points when every item of the rubric is negative (grading by
// deductions), plus the adjustment, kept within [0, points]. Every
// problem of the input is reported at once.
func ManualPoints(m exercise.ManualCell, in ManualInput) (float64, error) {
	byID := map[string]notebook.RubricItem{}
	start := m.Points
	for _, it := range m.Rubric {
		byID[it.ID] = it
		if it.Points > 0 {
			start = 0
		}
	}
	var problems []string
	seen := map[string]bool{}
	sum := start
	for _, id := range in.Items {
		it, ok := byID[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("items: %q is not an item of the rubric of %s", clip(id, 64), m.ID))
		case seen[id]:
			problems = append(problems, fmt.Sprintf("items: %q is applied twice", id))
		default:
			sum += it.Points
		}
		seen[id] = true
		if len(problems) >= 20 {
			break
		}
	}
	if math.IsNaN(in.Adjustment) || math.Abs(in.Adjustment) > m.Points {
		problems = append(problems, fmt.Sprintf("adjustment %v: must be within ±%g (the question's points)", in.Adjustment, m.Points))
	}
	problems = append(problems, textProblems("comment", in.Comment)...)
	if len(problems) > 0 {
		return 0, &domain.Error{Code: domain.EINVALID, Message: "the manual grade of " + m.ID + " is invalid", Problems: problems}
	}
	return math.Min(math.Max(sum+in.Adjustment, 0), m.Points), nil
}

func textProblems(field, s string) []string {
	switch {
	case len(s) > maxComment:
		return []string{fmt.Sprintf("%s: at most %d bytes", field, maxComment)}
	case !utf8.ValidString(s):
		return []string{field + ": not valid UTF-8"}
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ApplyManual puts the manual decisions in force into cells (a scored
// run's results, in place): a graded manual cell gets its points, the
// applied items and the comment; an overridden cell its set points.
func ApplyManual(ex *exercise.Exercise, cells []domain.CellResult, grades map[string]domain.ManualGrade) {
	for i := range cells {
		cr := &cells[i]
		g, ok := grades[cr.CellID]
		if !ok {
			continue
		}
		switch g.Kind {
		case store.ManualOverride:
			cr.Points = math.Min(math.Max(g.Points, 0), cr.MaxPoints)
			if i := strings.Index(cr.Message, "; points set to "); i >= 0 {
				cr.Message = cr.Message[:i] // an earlier override's note
			}
			cr.Message += "; " + overrideNote(cr)
		default:
			m, isManual := ex.ManualCell(cr.CellID)
			if !isManual {
				continue
			}
			pts, err := ManualPoints(m, ManualInput{Items: g.Items, Adjustment: g.Adjustment})
			if err != nil {
				// An item the rubric no longer has: the recorded points stand.
				pts = math.Min(g.Points, m.Points)
			}
			cr.Verdict, cr.Points = domain.VerdictManual, pts
			cr.Message = manualMessage(m, g)
		}
	}
}

func overrideNote(cr *domain.CellResult) string {
	return fmt.Sprintf("points set to %g of %g by an instructor", cr.Points, cr.MaxPoints)
}

// manualMessage is the feedback of a graded manual cell: who graded it,
// the rubric lines applied, and the comment.
func manualMessage(m exercise.ManualCell, g domain.ManualGrade) string {
	var b strings.Builder
	b.WriteString("graded by an instructor")
	for _, id := range g.Items {
		for _, it := range m.Rubric {
			if it.ID == id {
				fmt.Fprintf(&b, "\n[%+g] %s", it.Points, it.Text)
			}
		}
	}
	if g.Adjustment != 0 {
		fmt.Fprintf(&b, "\n[%+g]", g.Adjustment)
	}
	if c := strings.TrimSpace(g.Comment); c != "" {
		b.WriteString("\n" + c)
	}
	return b.String()
}

// multiplier is the late multiplier of sub under ex's policy with the
// learner's extension in force.
func (s Manual) multiplier(ctx context.Context, ex *exercise.Exercise, sub domain.Submission) (float64, error) {
	e, err := s.DB.ActiveExtension(ctx, ex.ID, sub.UserID)
	if err != nil {
		return 0, err
	}
	ext, err := ExtensionPolicy(e)
	if err != nil {
		return 0, err
	}
	return ex.Policy.Extended(ext).LateMultiplier(sub.CreatedAt), nil
}

// ManualStore is what manual grading reads and writes of the database.
type ManualStore interface {
	ActiveExtension(ctx context.Context, exerciseID string, userID int64) (*domain.Extension, error)
	GradedSubmissions(ctx context.Context, exerciseID string, userID int64) ([]domain.Submission, error)
	InTx(ctx context.Context, fn func(tx *store.Tx) error) error
	ManualGradeLog(ctx context.Context, submissionID string) ([]domain.ManualGrade, error)
	ManualGradedSubmissions(ctx context.Context, exerciseID, cellID string) ([]string, error)
	ManualGrades(ctx context.Context, submissionID string) (map[string]domain.ManualGrade, error)
	RubricSeen(ctx context.Context, exerciseID, cellID, digest string, items any) (changed bool, err error)
	Submission(ctx context.Context, id string) (domain.Submission, error)
}

// Manual records manual grades and overrides.
type Manual struct {
	DB ManualStore
}

// Scored lists the scored submissions of an exercise (graded, or waiting
// for manual grading), oldest first, without cells.
func (s Manual) Scored(ctx context.Context, exerciseID string) ([]domain.Submission, error) {
	return s.DB.GradedSubmissions(ctx, exerciseID, 0)
}

// Log lists every manual decision on a submission, oldest first.
func (s Manual) Log(ctx context.Context, submissionID string) ([]domain.ManualGrade, error) {
	return s.DB.ManualGradeLog(ctx, submissionID)
}

// Grades returns the manual decisions in force on a submission, by cell.
func (s Manual) Grades(ctx context.Context, submissionID string) (map[string]domain.ManualGrade, error) {
	return s.DB.ManualGrades(ctx, submissionID)
}

// Grade records grader's grade of manual cell cellID of submission subID
// and returns the submission with its new score.
func (s Manual) Grade(ctx context.Context, ex *exercise.Exercise, subID, cellID string, in ManualInput, grader domain.User) (domain.Submission, error) {
	m, ok := ex.ManualCell(cellID)
	if !ok {
		return domain.Submission{}, domain.Errorf(domain.ENOTFOUND, "exercise %s has no manual cell %q", ex.ID, cellID)
	}
	pts, err := ManualPoints(m, in)
	if err != nil {
		return domain.Submission{}, err
	}
	if in.Items == nil {
		in.Items = []string{}
	}
	g := domain.ManualGrade{CellID: cellID, Kind: store.ManualRubric, Items: in.Items, Adjustment: in.Adjustment,
		Comment: in.Comment, Points: pts, MaxPoints: m.Points}
	detail := fmt.Sprintf("%g of %g points; items %s; adjustment %g", pts, m.Points, strings.Join(in.Items, ","), in.Adjustment)
	return s.rescore(ctx, ex, subID, grader, g, "", domain.AuditManualGrade, detail, nil)
}

// Override sets the points of any cell of a submission (with a reason,
// kept in the score history) and returns the submission with its new score.
func (s Manual) Override(ctx context.Context, ex *exercise.Exercise, subID, cellID string, points float64, reason string, by domain.User) (domain.Submission, error) {
	return s.override(ctx, ex, subID, cellID, points, reason, by, nil)
}

// OverrideAnswering is Override answering regrade request answer.ID on
// that cell in the same transaction: if the request is no longer open
// (ECONFLICT) nothing is written, the override included.
func (s Manual) OverrideAnswering(ctx context.Context, ex *exercise.Exercise, subID, cellID string, points float64, reason string, by domain.User, answer store.RequestAnswer) (domain.Submission, error) {
	return s.override(ctx, ex, subID, cellID, points, reason, by, &answer)
}

func (s Manual) override(ctx context.Context, ex *exercise.Exercise, subID, cellID string, points float64, reason string, by domain.User, answer *store.RequestAnswer) (domain.Submission, error) {
	var problems []string
	if math.IsNaN(points) || math.IsInf(points, 0) || points < 0 {
		problems = append(problems, fmt.Sprintf("points %v: must be a number >= 0", points))
	}
	if strings.TrimSpace(reason) == "" {
		problems = append(problems, "reason: an override needs a reason")
	}
	problems = append(problems, textProblems("reason", reason)...)
	if len(problems) > 0 {
		return domain.Submission{}, &domain.Error{Code: domain.EINVALID, Message: "the override is invalid", Problems: problems}
	}
	g := domain.ManualGrade{CellID: cellID, Kind: store.ManualOverride, Items: []string{}, Comment: reason, Points: points}
	detail := fmt.Sprintf("%g points: %s", points, clip(reason, 500))
	return s.rescore(ctx, ex, subID, by, g, "override of "+cellID+" by "+by.Name+": "+reason, domain.AuditScoreOverride, detail, answer)
}

func (s Manual) rescore(ctx context.Context, ex *exercise.Exercise, subID string, by domain.User, g domain.ManualGrade, history, action, detail string, answer *store.RequestAnswer) (domain.Submission, error) {
	// The multiplier is read before the transaction (SQLite has one connection).
	before, err := s.DB.Submission(ctx, subID)
	if err != nil {
		return domain.Submission{}, err
	}
	if before.Check {
		// A check's score is kept nowhere: grading it by hand would be.
		return domain.Submission{}, domain.Errorf(domain.ECONFLICT, "%s is an uncounted check; it is not graded by hand", subID)
	}
	mult, err := s.multiplier(ctx, ex, before)
	if err != nil {
		return domain.Submission{}, err
	}
	err = s.DB.InTx(ctx, func(tx *store.Tx) error {
		sub, err := tx.LockSubmission(subID)
		if err != nil {
			return err
		}
		rs, err := s.change(ex, sub, g, mult, history, action, detail, answer)
		if err != nil {
			return err
		}
		return tx.WriteManualChange(subID, by, rs)
	})
	if err != nil {
		return domain.Submission{}, err
	}
	return s.DB.Submission(ctx, subID)
}

// change is a manual decision g applied to sub (its cells carry the
// decisions in force): the new cells and score, for the store to write.
func (s Manual) change(ex *exercise.Exercise, sub domain.Submission, g domain.ManualGrade, mult float64, history, action, detail string, answer *store.RequestAnswer) (store.ManualChange, error) {
	if sub.ExerciseID != ex.ID {
		return store.ManualChange{}, domain.Errorf(domain.ENOTFOUND, "submission %s is not of exercise %s", sub.ID, ex.ID)
	}
	if !domain.Scored(sub.Status) {
		return store.ManualChange{}, domain.Errorf(domain.ECONFLICT, "submission %s is %s; only a scored submission is graded by hand", sub.ID, sub.Status)
	}
	idx := -1
	for i, c := range sub.Cells {
		if c.CellID == g.CellID {
			idx = i
		}
	}
	if idx < 0 {
		return store.ManualChange{}, domain.Errorf(domain.ENOTFOUND, "submission %s has no graded cell %q", sub.ID, g.CellID)
	}
	if g.Kind == store.ManualOverride {
		if g.Points > sub.Cells[idx].MaxPoints {
			return store.ManualChange{}, &domain.Error{Code: domain.EINVALID, Message: "the override is invalid",
				Problems: []string{fmt.Sprintf("points %g: at most %g (the cell's points)", g.Points, sub.Cells[idx].MaxPoints)}}
		}
		g.MaxPoints = sub.Cells[idx].MaxPoints
	}
	// The cells carry the decisions in force already: apply the new one.
	cells := append([]domain.CellResult(nil), sub.Cells...)
	ApplyManual(ex, cells, map[string]domain.ManualGrade{g.CellID: g})
	score, msg := scoring.Total(cells, mult, "")
	return store.ManualChange{Grade: g, Cells: cells, Score: score, RawScore: scoring.Points(cells), Message: msg, Status: scoring.Status(cells), History: history, Reason: scoreReason(g.Kind, answer),
		AuditAction: action, AuditDetail: detail, Answer: answer}, nil
}

// scoreReason is the door a manual decision of kind changes a score through.
func scoreReason(kind string, answer *store.RequestAnswer) string {
	switch {
	case answer != nil:
		return domain.ScoreReasonRequest
	case kind == store.ManualOverride:
		return domain.ScoreReasonOverride
	case kind == store.ManualRubricChange:
		return domain.ScoreReasonRubric
	}
	return domain.ScoreReasonManual
}

// SyncRubrics records each manual cell's rubric and, when one changed
// since it was last seen, re-applies the recorded items of every
// submission graded with it under the new rubric (a rubric-change
// decision per submission, on record). The server calls it at start.
func (s Manual) SyncRubrics(ctx context.Context, cat *exercise.Catalog) error {
	for _, ex := range cat.List() {
		for _, m := range ex.Manual {
			b, _ := json.Marshal(m.Rubric)
			sum := sha256.Sum256(fmt.Appendf(b, "|%g", m.Points))
			changed, err := s.DB.RubricSeen(ctx, ex.ID, m.ID, hex.EncodeToString(sum[:8]), m.Rubric)
			if err != nil || !changed {
				if err != nil {
					return err
				}
				continue
			}
			if err := s.reapply(ctx, ex, m); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s Manual) reapply(ctx context.Context, ex *exercise.Exercise, m exercise.ManualCell) error {
	ids, err := s.DB.ManualGradedSubmissions(ctx, ex.ID, m.ID)
	if err != nil {
		return err
	}
	system := domain.User{Name: "npugrade"}
	for _, id := range ids {
		grades, err := s.DB.ManualGrades(ctx, id)
		if err != nil {
			return err
		}
		old, ok := grades[m.ID]
		if !ok || old.Kind == store.ManualOverride {
			continue // an override is a set number of points, no rubric
		}
		pts, err := ManualPoints(m, ManualInput{Items: old.Items, Adjustment: old.Adjustment})
		if err != nil {
			pts = math.Min(old.Points, m.Points) // the items changed too much to re-apply: the points stand
		}
		g := old
		g.Kind, g.Points, g.MaxPoints = store.ManualRubricChange, pts, m.Points
		detail := fmt.Sprintf("%s: %g → %g of %g points", ex.ID, old.Points, pts, m.Points)
		if _, err := s.rescore(ctx, ex, id, system, g, "", domain.AuditRubricChanged, detail, nil); err != nil {
			return fmt.Errorf("re-apply the rubric of %s/%s to %s: %w", ex.ID, m.ID, id, err)
		}
	}
	return nil
}
