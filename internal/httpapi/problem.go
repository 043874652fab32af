package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
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
	domain.EINVALID:      http.StatusUnprocessableEntity,
	domain.ENOTFOUND:     http.StatusNotFound,
	domain.EUNAUTHORIZED: http.StatusUnauthorized,
	domain.EFORBIDDEN:    http.StatusForbidden,
	domain.ECONFLICT:     http.StatusConflict,
	domain.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	domain.ERATELIMIT:    http.StatusTooManyRequests,
}

// problem writes err as problem+json; internal errors are logged and not shown.
func (s *Server) problem(c *gin.Context, err error) {
	code := domain.ErrorCode(err)
	status, ok := codeStatus[code]
	if !ok {
		status = http.StatusInternalServerError
		s.Log.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	}
	writeProblem(c, status, http.StatusText(status), domain.ErrorMessage(err), domain.ErrorProblems(err))
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
