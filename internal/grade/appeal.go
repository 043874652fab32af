package grade

// Appeals handle regrade requests: a learner asks
// about one graded question of their submission with a message; an
// instructor answers from a queue and may override the question's points
// with a reason (Manual records the override, the old score kept
// in the score history). The API and the pages both call this service;
// every step is audit-logged.

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/store"
)

// maxAppealText bounds a request's message and an answer (bytes).
const maxAppealText = 10000

// AppealStore is what regrade requests read and write of the database.
type AppealStore interface {
	ManualStore
	AnswerRegradeRequest(ctx context.Context, a store.RequestAnswer, by domain.User) (domain.RegradeRequest, error)
	CreateRegradeRequest(ctx context.Context, req domain.RegradeRequest, learner domain.User) (domain.RegradeRequest, error)
	RegradeRequest(ctx context.Context, id int64) (domain.RegradeRequest, error)
	RegradeRequests(ctx context.Context, f domain.RegradeRequestFilter) ([]domain.RegradeRequest, error)
}

// Appeals handles regrade requests over one database and catalog.
type Appeals struct {
	DB      AppealStore
	Catalog *exercise.Catalog
	Policy  *policy.Service
}

// AppealRequest is a learner's question: POST /api/v1/submissions/{id}/regrade-requests.
type AppealRequest struct {
	Cell    string `json:"cell"`
	Message string `json:"message"`
}

// AppealAnswer is an instructor's answer: POST /api/v1/regrade-requests/{id}/answer.
type AppealAnswer struct {
	Answer string `json:"answer"`
	// Points, when set, overrides the question's points (with Reason).
	Points *float64 `json:"points,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

func appealTextProblems(field, s string, required bool) []string {
	switch {
	case required && strings.TrimSpace(s) == "":
		return []string{field + ": required"}
	case len(s) > maxAppealText:
		return []string{fmt.Sprintf("%s: at most %d bytes", field, maxAppealText)}
	case !utf8.ValidString(s):
		return []string{field + ": not valid UTF-8"}
	}
	return nil
}

// Ask records u's question about a cell of their own scored submission.
func (s Appeals) Ask(ctx context.Context, u domain.User, submissionID string, req AppealRequest) (domain.RegradeRequest, error) {
	sub, err := s.Policy.Readable(ctx, u, submissionID)
	if err == nil && sub.UserID != u.ID {
		err = domain.Errorf(domain.EFORBIDDEN, "only the learner who made submission %s asks for its regrade", submissionID)
	}
	if err != nil {
		return domain.RegradeRequest{}, err
	}
	if sub.Check {
		return domain.RegradeRequest{}, domain.Errorf(domain.ECONFLICT, "%s is an uncounted check; a regrade is asked of a submission", sub.ID)
	}
	if !domain.Scored(sub.Status) {
		return domain.RegradeRequest{}, domain.Errorf(domain.ECONFLICT, "submission %s is %s; a regrade is asked of a scored submission", sub.ID, sub.Status)
	}
	problems := appealTextProblems("message", req.Message, true)
	found := false
	for _, c := range sub.Cells {
		found = found || c.CellID == req.Cell
	}
	if !found {
		problems = append(problems, fmt.Sprintf("cell: %q is not a graded question of submission %s", req.Cell, sub.ID))
	}
	if len(problems) > 0 {
		return domain.RegradeRequest{}, &domain.Error{Code: domain.EINVALID, Message: "the regrade request is invalid", Problems: problems}
	}
	open, err := s.DB.RegradeRequests(ctx, domain.RegradeRequestFilter{SubmissionID: sub.ID, State: domain.RegradeRequestOpen})
	if err != nil {
		return domain.RegradeRequest{}, err
	}
	for _, r := range open {
		if r.CellID == req.Cell {
			return domain.RegradeRequest{}, domain.Errorf(domain.ECONFLICT, "regrade request %d on %s is still open", r.ID, req.Cell)
		}
	}
	return s.DB.CreateRegradeRequest(ctx, domain.RegradeRequest{SubmissionID: sub.ID, CellID: req.Cell, Message: req.Message}, u)
}

// Of lists the requests on a submission u may read.
func (s Appeals) Of(ctx context.Context, u domain.User, submissionID string) ([]domain.RegradeRequest, error) {
	sub, err := s.Policy.Readable(ctx, u, submissionID)
	if err != nil {
		return nil, err
	}
	return s.DB.RegradeRequests(ctx, domain.RegradeRequestFilter{SubmissionID: sub.ID})
}

// Queue lists the requests in a state ("" = all), oldest first (staff).
func (s Appeals) Queue(ctx context.Context, state string) ([]domain.RegradeRequest, error) {
	switch state {
	case "", domain.RegradeRequestOpen, domain.RegradeRequestAnswered:
	default:
		return nil, &domain.Error{Code: domain.EINVALID, Message: "invalid state", Problems: []string{fmt.Sprintf("state %q: want open or answered", state)}}
	}
	return s.DB.RegradeRequests(ctx, domain.RegradeRequestFilter{State: state})
}

// Respond answers open request id; with Points set it also overrides the
// question's points (Manual.OverrideAnswering: the old score goes to
// the score history, the new one is the submission's), the answer, the
// override and their audit entries in one transaction.
func (s Appeals) Respond(ctx context.Context, by domain.User, id int64, a AppealAnswer) (domain.RegradeRequest, error) {
	r, err := s.DB.RegradeRequest(ctx, id)
	if err != nil {
		return r, err
	}
	problems := appealTextProblems("answer", a.Answer, true)
	if a.Points != nil {
		problems = append(problems, appealTextProblems("reason", a.Reason, true)...)
	}
	if len(problems) > 0 {
		return r, &domain.Error{Code: domain.EINVALID, Message: "the answer is invalid", Problems: problems}
	}
	if r.State != domain.RegradeRequestOpen {
		return r, domain.Errorf(domain.ECONFLICT, "regrade request %d was answered already", id)
	}
	answer := store.RequestAnswer{ID: id, Answer: a.Answer, Override: a.Points, Reason: a.Reason}
	if a.Points == nil {
		return s.DB.AnswerRegradeRequest(ctx, answer, by)
	}
	ex, err := s.Catalog.Get(r.Exercise)
	if err != nil {
		return r, err
	}
	reason := fmt.Sprintf("regrade request %d: %s", id, a.Reason)
	if _, err := (Manual{DB: s.DB}).OverrideAnswering(ctx, ex, r.SubmissionID, r.CellID, *a.Points, reason, by, answer); err != nil {
		return r, err
	}
	return s.DB.RegradeRequest(ctx, id)
}
