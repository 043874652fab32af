package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
)

// manualRoutes mounts manual grading: instructors grade a
// manual cell of a submission with its rubric.
func (s *Server) manualRoutes(api *gin.RouterGroup) {
	staff := s.requireRole(domain.RoleInstructor, domain.RoleAdmin)
	api.PUT("/submissions/:id/manual/:cell", staff, s.putManualGrade)
	api.GET("/submissions/:id/manual", staff, s.manualGradeLog)
}

func (s *Server) manual() *grade.Manual { return s.Services.Manual }

// maxJSONBody bounds the small JSON bodies of instructor requests.
const maxJSONBody = 64 << 10

// decodeStrict reads a JSON object into v, refusing unknown fields and
// trailing data; a fault is EINVALID with what was wrong.
func decodeStrict(c *gin.Context, v any, shape string) error {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxJSONBody+1))
	if err != nil {
		return domain.Errorf(domain.EINVALID, "the body could not be read: %v", err)
	}
	if len(body) > maxJSONBody {
		return &domain.Error{Code: domain.ETOOLARGE, Message: "the body is larger than 64 KiB"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &domain.Error{Code: domain.EINVALID, Message: "the body must be JSON " + shape, Problems: []string{err.Error()}}
	}
	if dec.More() {
		return &domain.Error{Code: domain.EINVALID, Message: "the body must be one JSON object " + shape}
	}
	return nil
}

func (s *Server) putManualGrade(c *gin.Context) {
	var in grade.ManualInput
	if err := decodeStrict(c, &in, `{"items": [...], "adjustment": 0, "comment": ""}`); err != nil {
		s.problem(c, err)
		return
	}
	sub, ok := s.visible(c)
	if !ok {
		return
	}
	ex, err := s.Catalog.Get(sub.ExerciseID)
	if err != nil {
		s.problem(c, err)
		return
	}
	out, err := s.manual().Grade(c.Request.Context(), ex, sub.ID, c.Param("cell"), in, currentUser(c))
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toJSON(c, out))
}

// manualGradeLog lists every manual decision on a submission (who, when,
// what), oldest first.
func (s *Server) manualGradeLog(c *gin.Context) {
	sub, ok := s.visible(c)
	if !ok {
		return
	}
	log, err := s.manual().Log(c.Request.Context(), sub.ID)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"submission_id": sub.ID, "grades": log})
}
