package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/similarity"
)

// similarityRoutes mounts the advisory similarity report.
func (s *Server) similarityRoutes(api *gin.RouterGroup) {
	api.GET("/exercises/:id/similarity", s.requireRole(domain.RoleInstructor, domain.RoleAdmin), s.similarityReport)
}

func (s *Server) similarity() *similarity.Service { return s.Services.Similarity }

func (s *Server) similarityReport(c *gin.Context) {
	o, err := SimilarityOptions(c.Query("threshold"), c.Query("limit"))
	if err != nil {
		s.problem(c, err)
		return
	}
	rep, err := s.similarity().Report(c.Request.Context(), currentUser(c), c.Param("id"), o)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, rep)
}

// SimilarityOptions reads ?threshold= (0 < t <= 1) and ?limit= (1–200),
// every problem at once; the pages use it too.
func SimilarityOptions(threshold, limit string) (similarity.Options, error) {
	var o similarity.Options
	var problems []string
	if threshold != "" {
		t, err := strconv.ParseFloat(threshold, 64)
		if err != nil || !(t > 0 && t <= 1) {
			problems = append(problems, "threshold: a number in (0, 1]")
		}
		o.Threshold = t
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > 200 {
			problems = append(problems, "limit: an integer from 1 to 200")
		}
		o.Limit = n
	}
	if len(problems) > 0 {
		return o, &domain.Error{Code: domain.EINVALID, Message: "invalid similarity options", Problems: problems}
	}
	return o, nil
}
