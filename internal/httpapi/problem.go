package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/grading"
)

// Problem is an RFC 9457 problem detail. Problems lists every individual
// fault when there were several.
type Problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail"`
	Instance string   `json:"instance,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

var codeStatus = map[string]int{
	grading.EINVALID:      http.StatusUnprocessableEntity,
	grading.ENOTFOUND:     http.StatusNotFound,
	grading.EUNAUTHORIZED: http.StatusUnauthorized,
	grading.EFORBIDDEN:    http.StatusForbidden,
	grading.ECONFLICT:     http.StatusConflict,
	grading.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	grading.ERATELIMIT:    http.StatusTooManyRequests,
}

// problem writes err as problem+json; internal errors are logged and not shown.
func (s *Server) problem(c *gin.Context, err error) {
	code := grading.ErrorCode(err)
	status, ok := codeStatus[code]
	if !ok {
		status = http.StatusInternalServerError
		s.Log.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	}
	writeProblem(c, status, http.StatusText(status), grading.ErrorMessage(err), grading.ErrorProblems(err))
}

func writeProblem(c *gin.Context, status int, title, detail string, problems []string) {
	p := Problem{Type: "about:blank", Title: title, Status: status, Detail: detail, Instance: c.Request.URL.Path, Problems: problems}
	c.Header("Content-Type", "application/problem+json")
	c.Status(status)
	c.Render(status, problemRender{p})
}

type problemRender struct{ p Problem }

func (r problemRender) Render(w http.ResponseWriter) error {
	return jsonEncode(w, r.p)
}

func (r problemRender) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/problem+json")
}
