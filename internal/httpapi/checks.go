package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/web"
)

// checkRoutes are the learner's uncounted checks and standing: what the
// notebook client (GET /client/npugrade.py) calls.
func (s *Server) checkRoutes(api gin.IRoutes) {
	api.POST("/checks", func(c *gin.Context) { s.upload(c, true) })
	api.GET("/checks", func(c *gin.Context) { s.list(c, true) })
	api.GET("/checks/:id", s.getCheck)
	api.GET("/status", s.standings)
}

// getCheck is GET /api/v1/submissions/{id} for a check: a submission's id
// is not a check.
func (s *Server) getCheck(c *gin.Context) {
	sub, ok := s.visible(c)
	if !ok {
		return
	}
	if !sub.Check {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "check %s not found", c.Param("id")))
		return
	}
	j := s.toJSON(c, s.policy().Redact(c.Request.Context(), currentUser(c), sub))
	j.WaitingFor = s.waitingFor(c.Request.Context(), sub, web.PrefersChinese(c.Request))
	c.JSON(http.StatusOK, j)
}

// StandingJSON is one exercise of GET /api/v1/status.
type StandingJSON struct {
	Exercise  string     `json:"exercise"`
	Title     string     `json:"title"`
	TitleEN   string     `json:"title_en"`
	Deadline  *time.Time `json:"deadline"`
	Extension bool       `json:"extension"`
	// AttemptsLeft is null when the exercise has no max_submissions.
	Attempts     int     `json:"attempts"`
	AttemptsLeft *int    `json:"attempts_left"`
	Policy       string  `json:"policy"`
	Score        float64 `json:"score"`
	MaxScore     float64 `json:"max_score"`
	// Counted is the id of the submission that counts ("" for none yet).
	Counted      string   `json:"counted_submission"`
	LatestScore  *float64 `json:"latest_score"`
	LatestStatus string   `json:"latest_status,omitempty"`
	Checks       *struct {
		Count int    `json:"count"`
		Per   string `json:"per"`
	} `json:"checks"`
	MaxPoints float64 `json:"max_points"`
}

func (s *Server) standings(c *gin.Context) {
	sts, err := s.policy().StandingsOf(c.Request.Context(), currentUser(c))
	if err != nil {
		s.problem(c, err)
		return
	}
	out := make([]StandingJSON, 0, len(sts))
	for _, st := range sts {
		ex := st.Exercise
		j := StandingJSON{Exercise: ex.ID, Title: ex.Title, TitleEN: ex.TitleEN, Deadline: st.Deadline, Extension: st.Extension,
			Attempts: st.Attempts, AttemptsLeft: st.Left, Policy: st.Counted.Policy, MaxPoints: ex.MaxPoints(nil)}
		if sub := st.Counted.Submission; sub != nil {
			j.Score, j.MaxScore, j.Counted = sub.Score, sub.MaxScore, sub.ID
		}
		if l := st.Latest; l != nil {
			j.LatestStatus = l.Status
			if l.Status == domain.StatusGraded || l.Status == domain.StatusNeedsManual {
				score := l.Score
				j.LatestScore = &score
			}
		}
		if p := ex.CheckPolicy(); !p.Off {
			j.Checks = &struct {
				Count int    `json:"count"`
				Per   string `json:"per"`
			}{p.Count, time.Duration(p.Per).String()}
		}
		out = append(out, j)
	}
	c.JSON(http.StatusOK, out)
}
