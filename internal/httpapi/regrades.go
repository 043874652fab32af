package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/regrade"
)

// regradeRoutes mounts the grading-engine routes: staged
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

func (s *Server) regrades() *regrade.Service { return s.Services.Regrades }

func (s *Server) stageRegrade(c *gin.Context) {
	var req regrade.Request
	if !s.bindJSON(c, &req, func(err error) error {
		return &domain.Error{Code: domain.EINVALID, Message: "the body must be JSON {\"exercise\": ..., \"mode\": \"recompare\"|\"reexecute\"}", Problems: []string{err.Error()}}
	}) {
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
		s.regradeReply(c, func() (domain.Regrade, error) { return s.regrades().Get(c.Request.Context(), id) })
	}
}

func (s *Server) applyRegrade(c *gin.Context) {
	if id, ok := s.regradeID(c); ok {
		s.regradeReply(c, func() (domain.Regrade, error) {
			rg, err := s.regrades().Apply(c.Request.Context(), id)
			if err == nil {
				s.audit(c, domain.AuditRegradeApply, "regrade "+strconv.FormatInt(id, 10), "through the API")
			}
			return rg, err
		})
	}
}

func (s *Server) discardRegrade(c *gin.Context) {
	if id, ok := s.regradeID(c); ok {
		s.regradeReply(c, func() (domain.Regrade, error) { return s.regrades().Discard(c.Request.Context(), id) })
	}
}

func (s *Server) regradeReply(c *gin.Context, f func() (domain.Regrade, error)) {
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
	c.JSON(http.StatusOK, gin.H{"submission_id": sub.ID, "current": s.toJSON(c, s.policy().Redact(c.Request.Context(), currentUser(c), sub)), "history": h})
}

// CountedScoreJSON is the caller's score that counts for an exercise.
type CountedScoreJSON struct {
	Exercise     string  `json:"exercise"`
	Policy       string  `json:"policy"`
	Attempts     int     `json:"attempts"`
	Score        float64 `json:"score"`
	MaxScore     float64 `json:"max_score"`
	SubmissionID string  `json:"submission_id,omitempty"`
	// Status is the counted submission's: needs-manual while its score is
	// the automatic part's and a manual question waits for a person
	// (ManualPending says the same as a flag).
	Status        string `json:"status,omitempty"`
	ManualPending bool   `json:"manual_pending"`
}

// countedScore is the caller's graded submission that counts under the
// exercise's policy (policy.Counts: the best score, or the latest).
func (s *Server) countedScore(c *gin.Context) {
	ex, err := s.Catalog.Get(c.Param("id"))
	if err != nil {
		s.problem(c, err)
		return
	}
	counted, err := s.policy().Counted(c.Request.Context(), ex, currentUser(c).ID)
	if err != nil {
		s.problem(c, err)
		return
	}
	out := CountedScoreJSON{Exercise: ex.ID, Policy: ex.Counts, Attempts: counted.Attempts}
	if sub := counted.Submission; sub != nil {
		out.Score, out.MaxScore, out.SubmissionID = sub.Score, sub.MaxScore, sub.ID
		out.Status, out.ManualPending = sub.Status, sub.Status == domain.StatusNeedsManual
	}
	c.JSON(http.StatusOK, out)
}
