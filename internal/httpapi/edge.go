package httpapi

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

// Longest path parameter and query value accepted: ids and filters are
// short; anything longer is not one of ours.
const (
	maxParamBytes = 256
	maxQueryBytes = 1024
	maxQueryCount = 32
)

// cleanText is valid UTF-8 without NUL and at most max bytes: what every
// id and filter must be before it reaches a query (Postgres refuses the
// rest with an error, which used to surface as 500).
func cleanText(s string, max int) bool {
	return len(s) <= max && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// edgeCheck validates every path parameter (404 when it cannot name
// anything) and query parameter (422 listing each bad one) of every
// route, API and pages, before a handler sees them.
func (s *Server) edgeCheck() gin.HandlerFunc {
	return func(c *gin.Context) {
		for _, p := range c.Params {
			if !cleanText(p.Value, maxParamBytes) {
				s.problem(c, domain.Errorf(domain.ENOTFOUND, "no %s %s here", p.Key, domain.Printable(truncate(p.Value, 64))))
				c.Abort()
				return
			}
		}
		q := c.Request.URL.Query()
		var problems []string
		if len(q) > maxQueryCount {
			problems = append(problems, fmt.Sprintf("%d query parameters, at most %d", len(q), maxQueryCount))
		}
		for k, vs := range q {
			if len(problems) >= 10 {
				break
			}
			ok := cleanText(k, maxParamBytes) && len(vs) <= maxQueryCount
			for _, v := range vs {
				ok = ok && cleanText(v, maxQueryBytes)
			}
			if !ok {
				problems = append(problems, fmt.Sprintf("query parameter %s must be UTF-8 text without NUL, at most %d bytes", domain.Printable(truncate(k, 64)), maxQueryBytes))
			}
		}
		if len(problems) > 0 {
			s.problem(c, &domain.Error{Code: domain.EINVALID, Message: "the query is not valid", Problems: problems})
			c.Abort()
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
