package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/policy"
)

// feedbackRoutes mounts feedback release and regrade requests.
func (s *Server) feedbackRoutes(api *gin.RouterGroup) {
	staff := s.requireRole(domain.RoleInstructor, domain.RoleAdmin)
	api.POST("/exercises/:id/feedback/release", staff, s.releaseFeedback)
	api.GET("/exercises/:id/feedback/releases", staff, s.feedbackReleases)
	api.POST("/submissions/:id/regrade-requests", s.askRegrade)
	api.GET("/submissions/:id/regrade-requests", s.submissionRegradeRequests)
	api.GET("/regrade-requests", staff, s.regradeRequestQueue)
	api.POST("/regrade-requests/:id/answer", staff, s.answerRegradeRequest)
}

func (s *Server) feedback() *policy.FeedbackReleases { return s.Services.Releases }

func (s *Server) appeals() *grade.Appeals { return s.Services.Appeals }

func (s *Server) releaseFeedback(c *gin.Context) {
	var req struct {
		Learner string `json:"learner"`
	}
	if c.Request.ContentLength != 0 {
		if err := decodeStrict(c, &req, `{"learner": "name"} (or {} for everyone)`); err != nil {
			s.problem(c, err)
			return
		}
	}
	r, err := s.feedback().Release(c.Request.Context(), currentUser(c), c.Param("id"), req.Learner)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) feedbackReleases(c *gin.Context) {
	ex, err := s.Catalog.Get(c.Param("id"))
	if err != nil {
		s.problem(c, err)
		return
	}
	list, err := s.feedback().Releases(c.Request.Context(), ex.ID)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"exercise": ex.ID, "feedback": ex.Feedback, "releases": list})
}

func (s *Server) askRegrade(c *gin.Context) {
	var req grade.AppealRequest
	if err := decodeStrict(c, &req, `{"cell": "q3", "message": "..."}`); err != nil {
		s.problem(c, err)
		return
	}
	r, err := s.appeals().Ask(c.Request.Context(), currentUser(c), c.Param("id"), req)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusCreated, r)
}

func (s *Server) submissionRegradeRequests(c *gin.Context) {
	list, err := s.appeals().Of(c.Request.Context(), currentUser(c), c.Param("id"))
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"requests": list})
}

func (s *Server) regradeRequestQueue(c *gin.Context) {
	list, err := s.appeals().Queue(c.Request.Context(), c.Query("state"))
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"requests": list})
}

func (s *Server) answerRegradeRequest(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "regrade request %q not found", c.Param("id")))
		return
	}
	var a grade.AppealAnswer
	if err := decodeStrict(c, &a, `{"answer": "...", "points": 2, "reason": "..."}`); err != nil {
		s.problem(c, err)
		return
	}
	r, err := s.appeals().Respond(c.Request.Context(), currentUser(c), id, a)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}
