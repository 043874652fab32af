package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
)

// listSubmissions answers GET /api/v1/submissions: newest first, filtered
// by learner, exercise and status, a page of at most limit at a time; the
// Link header (rel="next") carries the cursor of the next page.
func (s *Server) listSubmissions(c *gin.Context) {
	u := currentUser(c)
	f, err := s.submissionFilter(c.Request.Context(), u, c.Request.URL.Query())
	if err != nil {
		s.problem(c, err)
		return
	}
	subs, err := s.DB.Submissions(c.Request.Context(), f)
	if err != nil {
		s.problem(c, err)
		return
	}
	out := make([]SubmissionJSON, len(subs))
	for i, sub := range subs {
		out[i] = toJSON(s.policy().Redact(u, sub))
	}
	if len(subs) == f.Limit {
		next := c.Request.URL.Query()
		next.Set("cursor", base64.RawURLEncoding.EncodeToString([]byte(subs[len(subs)-1].ID)))
		c.Header("Link", fmt.Sprintf(`</api/v1/submissions?%s>; rel="next"`, next.Encode()))
	}
	c.JSON(http.StatusOK, out)
}

// submissionFilter reads the listing's query, reporting every invalid
// value at once. Learners are always limited to their own submissions.
func (s *Server) submissionFilter(ctx context.Context, u domain.User, q url.Values) (store.SubmissionFilter, error) {
	f := store.SubmissionFilter{ExerciseID: q.Get("exercise"), Status: q.Get("status"), Limit: 100}
	var problems []string
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			problems = append(problems, fmt.Sprintf("limit=%q: want an integer from 1 to 1000", v))
		} else {
			f.Limit = n
		}
	}
	statuses := []string{domain.StatusQueued, domain.StatusRunning, domain.StatusGraded, domain.StatusFailed}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		problems = append(problems, fmt.Sprintf("status=%q: want queued, running, graded or failed", f.Status))
	}
	if f.ExerciseID != "" && s.Catalog != nil {
		if _, err := s.Catalog.Get(f.ExerciseID); err != nil {
			problems = append(problems, fmt.Sprintf("exercise=%q: no such exercise", f.ExerciseID))
		}
	}
	if !u.Role.CanSeeAll() {
		f.UserID = u.ID
	}
	if name := q.Get("learner"); name != "" {
		switch learner, err := s.DB.UserByName(ctx, name); {
		case err == nil && (u.Role.CanSeeAll() || learner.ID == u.ID):
			f.UserID = learner.ID
		case domain.ErrorCode(err) == domain.ENOTFOUND || err == nil:
			// A learner naming someone else learns nothing about them.
			problems = append(problems, fmt.Sprintf("learner=%q: no such learner", name))
		default:
			return f, err
		}
	}
	if v := q.Get("cursor"); v != "" {
		after, err := s.cursorSubmission(ctx, u, v)
		if err != nil {
			return f, err
		}
		if after == nil {
			problems = append(problems, "cursor: not a cursor this listing gave out")
		}
		f.After = after
	}
	if len(problems) > 0 {
		return f, &domain.Error{Code: domain.EINVALID, Message: "invalid query", Problems: problems}
	}
	return f, nil
}

// cursorSubmission decodes a cursor: the id of the last submission of the
// previous page, which this user must be able to see. nil: not valid.
func (s *Server) cursorSubmission(ctx context.Context, u domain.User, cursor string) (*domain.Submission, error) {
	id, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(id) == 0 || !cleanText(string(id), 64) {
		return nil, nil // not an id: Postgres would refuse NUL or non-UTF-8 bytes
	}
	sub, err := s.DB.Submission(ctx, string(id))
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if sub.UserID != u.ID && !u.Role.CanSeeAll() {
		return nil, nil
	}
	return &sub, nil
}
