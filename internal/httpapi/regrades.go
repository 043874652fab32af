package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/regrade"
	"github.com/npugrade/npugrade/internal/store"
)

// regradeRoutes mounts the grading-engine routes (issue 3): staged
// regrades for instructors, score history, and the score that counts.
func (s *Server) regradeRoutes(api *gin.RouterGroup) {
	staff := s.requireRole(domain.RoleInstructor, domain.RoleAdmin)
	api.POST("/regrades", staff, s.stageRegrade)
	api.GET("/regrades/:id", staff, s.getRegrade)
	api.POST("/regrades/:id/apply", staff, s.applyRegrade)
	api.POST("/regrades/:id/discard", staff, s.discardRegrade)
	api.GET("/submissions/:id/history", staff, s.scoreHistory)
	api.GET("/exercises/:id/score", s.countedScore)
}

func (s *Server) regrades() *regrade.Service {
	return &regrade.Service{DB: s.DB, Queue: s.Queue, Catalog: s.Catalog}
}

func (s *Server) stageRegrade(c *gin.Context) {
	var req regrade.Request
	if err := c.ShouldBindJSON(&req); err != nil {
		s.problem(c, &domain.Error{Code: domain.EINVALID, Message: "the body must be JSON {\"exercise\": ..., \"mode\": \"recompare\"|\"reexecute\"}", Problems: []string{err.Error()}})
		return
	}
	r, err := s.regrades().Stage(c.Request.Context(), req, currentUser(c))
	if err != nil {
		s.problem(c, err)
		return
	}
	c.Header("Location", "/api/v1/regrades/"+strconv.FormatInt(r.ID, 10))
	c.JSON(http.StatusCreated, r)
}

func (s *Server) regradeID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "regrade %q not found", c.Param("id")))
		return 0, false
	}
	return id, true
}

func (s *Server) getRegrade(c *gin.Context) {
	if id, ok := s.regradeID(c); ok {
		s.regradeReply(c, func() (store.Regrade, error) { return s.regrades().Get(c.Request.Context(), id) })
	}
}

func (s *Server) applyRegrade(c *gin.Context) {
	if id, ok := s.regradeID(c); ok {
		s.regradeReply(c, func() (store.Regrade, error) {
			rg, err := s.regrades().Apply(c.Request.Context(), id)
			if err == nil {
				s.audit(c, store.AuditRegradeApply, "regrade "+strconv.FormatInt(id, 10), "through the API")
			}
			return rg, err
		})
	}
}

func (s *Server) discardRegrade(c *gin.Context) {
	if id, ok := s.regradeID(c); ok {
		s.regradeReply(c, func() (store.Regrade, error) { return s.regrades().Discard(c.Request.Context(), id) })
	}
}

func (s *Server) regradeReply(c *gin.Context, f func() (store.Regrade, error)) {
	r, err := f()
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) scoreHistory(c *gin.Context) {
	sub, ok := s.visible(c)
	if !ok {
		return
	}
	h, err := s.DB.ScoreHistory(c.Request.Context(), sub.ID)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"submission_id": sub.ID, "current": s.redact(currentUser(c), sub), "history": h})
}

// CountedScoreJSON is the caller's score that counts for an exercise.
type CountedScoreJSON struct {
	Exercise     string  `json:"exercise"`
	Policy       string  `json:"policy"`
	Attempts     int     `json:"attempts"`
	Score        float64 `json:"score"`
	MaxScore     float64 `json:"max_score"`
	SubmissionID string  `json:"submission_id,omitempty"`
}

// countedScore picks the caller's graded submission that counts under the
// exercise's policy: the best score (earliest of equal ones) or the latest.
func (s *Server) countedScore(c *gin.Context) {
	ex, err := s.Catalog.Get(c.Param("id"))
	if err != nil {
		s.problem(c, err)
		return
	}
	subs, err := s.DB.GradedSubmissions(c.Request.Context(), ex.ID, currentUser(c).ID)
	if err != nil {
		s.problem(c, err)
		return
	}
	out := CountedScoreJSON{Exercise: ex.ID, Policy: ex.Counts, Attempts: len(subs)}
	for i, sub := range subs {
		if i == 0 || (ex.Counts == "latest") || sub.Score > out.Score {
			out.Score, out.MaxScore, out.SubmissionID = sub.Score, sub.MaxScore, sub.ID
		}
	}
	c.JSON(http.StatusOK, out)
}

// redact is the one way a submission leaves the server: every response
// that carries one (create, idempotent replay, get, list, history, the
// pages) goes through it. It hides the details of questions whose
// feedback the learner may not see (visibility hidden, or after_due_date
// before the deadline). Instructors see everything. Verdicts and points
// stay visible. An exercise no longer in the catalog hides every detail:
// its rules are unknown, so nothing is assumed visible.
func (s *Server) redact(u domain.User, sub domain.Submission) SubmissionJSON {
	out := toJSON(sub)
	if u.Role.CanSeeAll() {
		return out
	}
	ex, exErr := s.Catalog.Get(sub.ExerciseID)
	now := s.DB.Now()
	cells := make([]domain.CellResult, len(out.Cells))
	for i, cr := range out.Cells {
		if exErr != nil || !ex.DetailsVisible(cr.CellID, now) {
			cr.Observed, cr.Expected, cr.Diff = "", "", ""
			cr.Message = "details of this question are hidden"
			if exErr == nil && ex.Deadline != nil && !now.After(*ex.Deadline) {
				for _, g := range ex.Graded {
					if g.ID == cr.CellID && g.Visibility == "after_due_date" {
						cr.Message = "details of this question are shown after the due date (" + ex.Deadline.UTC().Format("2006-01-02 15:04 UTC") + ")"
					}
				}
			}
		}
		cells[i] = cr
	}
	out.Cells = cells
	return out
}
