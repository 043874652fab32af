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
	"github.com/npugrade/npugrade/internal/policy"
)

// listSubmissions answers GET /api/v1/submissions: newest first, filtered
// by learner, exercise and status, a page of at most limit at a time; the
// Link header (rel="next") carries the cursor of the next page.
func (s *Server) listSubmissions(c *gin.Context) { s.list(c, false) }

// list answers a listing of submissions or, with checks, of checks.
func (s *Server) list(c *gin.Context, checks bool) {
	u := currentUser(c)
	f, err := s.submissionFilter(c.Request.Context(), u, c.Request.URL.Query())
	if err != nil {
		s.problem(c, err)
		return
	}
	f.Checks = checks
	path := "/api/v1/submissions"
	if checks {
		path = "/api/v1/checks"
	}
	subs, err := s.policy().List(c.Request.Context(), u, f)
	if err != nil {
		s.problem(c, err)
		return
	}
	out := make([]SubmissionJSON, len(subs))
	for i, sub := range subs {
		out[i] = s.toJSON(c, sub)
	}
	if len(subs) == f.Limit {
		next := c.Request.URL.Query()
		next.Set("cursor", base64.RawURLEncoding.EncodeToString([]byte(subs[len(subs)-1].ID)))
		c.Header("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, path, next.Encode()))
	}
	c.JSON(http.StatusOK, out)
}

// submissionFilter reads the listing's query, reporting every invalid
// value at once. Whose submissions the user may list is policy's to say.
func (s *Server) submissionFilter(ctx context.Context, u domain.User, q url.Values) (domain.SubmissionFilter, error) {
	l := policy.Listing{Learner: q.Get("learner")}
	var problems, cursor []string
	if v := q.Get("cursor"); v != "" {
		id, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || len(id) == 0 || !cleanText(string(id), 64) {
			// Not an id: Postgres would refuse NUL or non-UTF-8 bytes.
			cursor = append(cursor, "cursor: not a cursor this listing gave out")
		} else {
			l.After = string(id)
		}
	}
	f, scoped, err := s.policy().Filter(ctx, u, l)
	if err != nil {
		return f, err
	}
	f.ExerciseID, f.Status, f.Limit = q.Get("exercise"), q.Get("status"), 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			problems = append(problems, fmt.Sprintf("limit=%q: want an integer from 1 to 1000", v))
		} else {
			f.Limit = n
		}
	}
	statuses := []string{domain.StatusQueued, domain.StatusRunning, domain.StatusGraded, domain.StatusNeedsManual, domain.StatusFailed}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		problems = append(problems, fmt.Sprintf("status=%q: want queued, running, graded or failed", f.Status))
	}
	if f.ExerciseID != "" && s.Catalog != nil {
		if _, err := s.Catalog.Get(f.ExerciseID); err != nil {
			problems = append(problems, fmt.Sprintf("exercise=%q: no such exercise", f.ExerciseID))
		}
	}
	if problems = append(append(problems, scoped...), cursor...); len(problems) > 0 {
		return f, &domain.Error{Code: domain.EINVALID, Message: "invalid query", Problems: problems}
	}
	return f, nil
}
