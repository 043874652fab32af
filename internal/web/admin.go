package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

type userView struct {
	domain.User
	Tokens []domain.TokenInfo
}

type usersData struct {
	Users    []userView
	Roles    []domain.Role
	NewToken string
	NewFor   string
	Message  string
	Problems []string // a roster's, every one
	Notice   string
}

func (h *handler) usersPage(c *gin.Context) { h.renderUsers(c, http.StatusOK, usersData{}) }

func (h *handler) renderUsers(c *gin.Context, status int, d usersData) {
	ctx, lang := c.Request.Context(), c.GetString(ctxLang)
	users, err := h.Users.ListUsers(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	tokens, err := h.Users.Tokens(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	byUser := map[int64][]domain.TokenInfo{}
	for _, t := range tokens {
		byUser[t.UserID] = append(byUser[t.UserID], t)
	}
	for _, u := range users {
		d.Users = append(d.Users, userView{User: u, Tokens: byUser[u.ID]})
	}
	d.Roles = []domain.Role{domain.RoleLearner, domain.RoleInstructor, domain.RoleAdmin, domain.RoleRunner}
	h.render(c, status, "users", translate(lang, "users.title"), "users", d)
}

// createUser adds a user and shows its first token once, in the response
// (never in a URL).
func (h *handler) createUser(c *gin.Context) {
	name := strings.TrimSpace(c.PostForm("name"))
	u, token, err := h.Users.CreateUser(c.Request.Context(), name, domain.Role(c.PostForm("role")))
	if err != nil {
		h.refused(c, err, func(status int) { h.renderUsers(c, status, usersData{Message: domain.ErrorMessage(err)}) })
		return
	}
	h.audit(c, domain.AuditUserCreated, u.Name, "role "+string(u.Role))
	h.renderUsers(c, http.StatusCreated, usersData{NewToken: token, NewFor: u.Name})
}

func (h *handler) createToken(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "no user %q", c.Param("id")))
		return
	}
	users, err := h.Users.ListUsers(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, u := range users {
		if u.ID == id {
			token, err := h.Users.CreateToken(c.Request.Context(), id)
			if err != nil {
				h.fail(c, err)
				return
			}
			h.audit(c, domain.AuditTokenCreated, u.Name, "")
			h.renderUsers(c, http.StatusCreated, usersData{NewToken: token, NewFor: u.Name})
			return
		}
	}
	h.fail(c, domain.Errorf(domain.ENOTFOUND, "no user %d", id))
}

func (h *handler) revokeToken(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err == nil {
		err = h.Users.RevokeToken(c.Request.Context(), id)
	} else {
		err = domain.Errorf(domain.ENOTFOUND, "no token %q", c.Param("id"))
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.audit(c, domain.AuditTokenRevoked, "token "+c.Param("id"), "")
	c.Redirect(http.StatusSeeOther, "/admin/users")
}

func (h *handler) runnersPage(c *gin.Context) {
	lang := c.GetString(ctxLang)
	runners, err := h.Fleet.Runners(c.Request.Context(), time.Time{})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "runners", translate(lang, "runners.title"), "runners", runners)
}

func (h *handler) drainRunner(c *gin.Context) {
	drain := c.PostForm("drain") == "1"
	if err := h.Fleet.SetRunnerDrain(c.Request.Context(), c.Param("id"), drain); err != nil {
		h.fail(c, err)
		return
	}
	action := domain.AuditRunnerResume
	if drain {
		action = domain.AuditRunnerDrain
	}
	h.audit(c, action, c.Param("id"), "from the admin page")
	c.Redirect(http.StatusSeeOther, "/admin/runners")
}

// audit records an action of the signed-in user; a failure to record is
// logged, not shown (the action itself has happened).
func (h *handler) audit(c *gin.Context, action, subject, detail string) {
	h.auditAs(c, sessionOf(c).User, action, subject, detail)
}

func (h *handler) auditAs(c *gin.Context, actor domain.User, action, subject, detail string) {
	if err := h.Audit.Audit(c.Request.Context(), actor, action, subject, detail); err != nil {
		h.Log.Warn("audit log", "action", action, "err", err)
	}
}

type auditData struct {
	Events []domain.AuditEvent
}

func (h *handler) auditPage(c *gin.Context) {
	events, err := h.Audit.AuditEvents(c.Request.Context(), 500)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "audit", translate(c.GetString(ctxLang), "audit.title"), "audit", auditData{Events: events})
}
