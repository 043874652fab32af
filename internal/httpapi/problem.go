package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/problem"
	"github.com/npugrade/npugrade/internal/web"
)

// problem writes err as problem+json. A database fault becomes 503 (with
// Retry-After) or 507 with its reason; other internal errors are 500,
// logged (identical ones once per interval, with a count) and not shown.
func (s *Server) problem(c *gin.Context, err error) {
	status, fault, ok := policy.Classify(err)
	switch {
	case fault != nil:
		// One line per kind of fault and interval: a database that is
		// down fails every request, in a few different words.
		s.errorLog().log(c.Request.Context(), fault.Code, "database fault", err, "method", c.Request.Method, "path", c.Request.URL.Path, "code", fault.Code)
		if fault.Code == domain.ESTORAGE {
			s.storageFault.Store(time.Now().UnixNano())
		}
		err = fault
	case !ok:
		s.errorLog().log(c.Request.Context(), "", "request failed", err, "method", c.Request.Method, "path", c.Request.URL.Path)
	}
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "5")
	}
	detail, problems := domain.ErrorMessage(err), domain.ErrorProblems(err)
	if web.PrefersChinese(c.Request) {
		// Worded as the pages word them; the type and title stay the
		// HTTP status's, for programs.
		detail = web.ChineseProblem(detail)
		zh := make([]string, len(problems))
		for i, p := range problems {
			zh[i] = web.ChineseProblem(p)
		}
		problems = zh
	}
	writeProblem(c, status, http.StatusText(status), detail, problems)
}

func writeProblem(c *gin.Context, status int, title, detail string, problems []string) {
	p := problem.New(status, detail, c.Request.URL.Path, problems)
	p.Title = title
	c.Header("Content-Type", problem.MediaType)
	c.Status(status)
	c.Render(status, problemRender{p})
}

type problemRender struct{ p problem.Detail }

func (r problemRender) Render(w http.ResponseWriter) error {
	return jsonEncode(w, r.p)
}

func (r problemRender) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", problem.MediaType)
}
