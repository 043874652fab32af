package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
)

type userView struct {
	domain.User
	Tokens []store.TokenInfo
}

type usersData struct {
	Users    []userView
	Roles    []domain.Role
	NewToken string
	NewFor   string
	Message  string
}

func (h *handler) usersPage(c *gin.Context) { h.renderUsers(c, http.StatusOK, usersData{}) }

func (h *handler) renderUsers(c *gin.Context, status int, d usersData) {
	ctx, lang := c.Request.Context(), c.GetString(ctxLang)
	users, err := h.DB.ListUsers(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	tokens, err := h.DB.Tokens(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	byUser := map[int64][]store.TokenInfo{}
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
	u, token, err := h.DB.CreateUser(c.Request.Context(), name, domain.Role(c.PostForm("role")))
	if err != nil {
		if domain.ErrorCode(err) == domain.EINTERNAL {
			h.fail(c, err)
			return
		}
		h.renderUsers(c, http.StatusUnprocessableEntity, usersData{Message: domain.ErrorMessage(err)})
		return
	}
	h.renderUsers(c, http.StatusCreated, usersData{NewToken: token, NewFor: u.Name})
}

func (h *handler) createToken(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "no user %q", c.Param("id")))
		return
	}
	users, err := h.DB.ListUsers(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, u := range users {
		if u.ID == id {
			token, err := h.DB.CreateToken(c.Request.Context(), id)
			if err != nil {
				h.fail(c, err)
				return
			}
			h.renderUsers(c, http.StatusCreated, usersData{NewToken: token, NewFor: u.Name})
			return
		}
	}
	h.fail(c, domain.Errorf(domain.ENOTFOUND, "no user %d", id))
}

func (h *handler) revokeToken(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err == nil {
		err = h.DB.RevokeToken(c.Request.Context(), id)
	} else {
		err = domain.Errorf(domain.ENOTFOUND, "no token %q", c.Param("id"))
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/admin/users")
}

func (h *handler) runnersPage(c *gin.Context) {
	lang := c.GetString(ctxLang)
	runners, err := h.DB.Runners(c.Request.Context(), time.Time{})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "runners", translate(lang, "runners.title"), "runners", runners)
}

func (h *handler) drainRunner(c *gin.Context) {
	if err := h.DB.SetRunnerDrain(c.Request.Context(), c.Param("id"), c.PostForm("drain") == "1"); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/admin/runners")
}
