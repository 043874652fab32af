package httpapi

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
)

// rosterRoutes mounts the roster import for admins: the same
// import as npugrade user import and the admin page's upload.
func (s *Server) rosterRoutes(api *gin.RouterGroup) {
	api.POST("/roster", s.requireRole(domain.RoleAdmin), s.importRoster)
}

// RosterUserJSON is a new user of a roster with their token, given once.
type RosterUserJSON struct {
	Login   string `json:"login"`
	Name    string `json:"name"`
	Section string `json:"section"`
	Role    string `json:"role"`
	Token   string `json:"token"`
}

// RosterResultJSON is what a roster import did.
type RosterResultJSON struct {
	Created   []RosterUserJSON `json:"created"`
	Updated   []string         `json:"updated"`
	Unchanged int              `json:"unchanged"`
}

// rosterTypes are the media types a roster body may have.
var rosterTypes = map[string]bool{"text/csv": true, "application/csv": true, "text/plain": true}

// importRoster is POST /api/v1/roster: the body is the roster CSV. The
// new users' tokens are in the answer and nowhere else (JSON, or the
// tokens CSV with Accept: text/csv); 201 when someone was created, else
// 200. A bad roster is 422 with every bad row, and nothing is imported.
func (s *Server) importRoster(c *gin.Context) {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || !rosterTypes[mt] {
		s.problem(c, &domain.Error{Code: domain.EINVALID, Message: "the body must be the roster as CSV (Content-Type: text/csv)",
			Problems: []string{"content type " + strings.TrimSpace(c.GetHeader("Content-Type")) + ": want text/csv"}})
		return
	}
	res, err := s.Services.Rosters.ImportInto(c.Request.Context(), currentUser(c), c.Request.Body, c.Query("cohort"))
	if err != nil {
		s.problem(c, err)
		return
	}
	status := http.StatusOK
	if len(res.Created) > 0 {
		status = http.StatusCreated
	}
	c.Header("Cache-Control", "no-store") // the tokens exist only in this answer
	if strings.Contains(c.GetHeader("Accept"), "text/csv") {
		var buf bytes.Buffer
		if err := accounts.WriteTokens(&buf, res.Created); err != nil {
			s.problem(c, err)
			return
		}
		c.Data(status, "text/csv; charset=utf-8", buf.Bytes())
		return
	}
	out := RosterResultJSON{Created: []RosterUserJSON{}, Updated: res.Updated, Unchanged: res.Unchanged}
	if out.Updated == nil {
		out.Updated = []string{}
	}
	for _, u := range res.Created {
		out.Created = append(out.Created, RosterUserJSON{Login: u.Name, Name: u.FullName, Section: u.Section, Role: string(u.Role), Token: u.Token})
	}
	c.JSON(status, out)
}
