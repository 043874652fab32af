package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

func (h *handler) loginData(next, msg string) loginData {
	return loginData{Next: next, Message: msg, JupyterHub: h.HubLogin != nil}
}

// callbackURL is this server's redirect URI for an outside sign-in, as
// the browser reaches it (registered at the provider).
func callbackURL(r *http.Request, path string) string {
	scheme := "http"
	if isTLS(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}

// hubLogin sends the browser to the hub's authorization page
// (GET /login/jupyterhub).
func (h *handler) hubLogin(c *gin.Context) {
	if h.HubLogin == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "this server trusts no JupyterHub"))
		return
	}
	to, err := h.HubLogin.Begin(c.Request.Context(), callbackURL(c.Request, "/login/jupyterhub/callback"), safeNext(c.Query("next")))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, to)
}

// hubCallback finishes a hub sign-in (GET /login/jupyterhub/callback).
func (h *handler) hubCallback(c *gin.Context) {
	if h.HubLogin == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "this server trusts no JupyterHub"))
		return
	}
	if e := c.Query("error"); e != "" {
		h.outsideFailed(c, "", domain.Errorf(domain.EUNAUTHORIZED, "JupyterHub did not sign you in: %s", e))
		return
	}
	u, next, err := h.HubLogin.Finish(c.Request.Context(), callbackURL(c.Request, "/login/jupyterhub/callback"), c.Query("state"), c.Query("code"))
	if err != nil {
		h.outsideFailed(c, u.Name, err)
		return
	}
	h.startSession(c, u, safeNext(next), "jupyterhub from "+c.ClientIP())
}

// outsideFailed records a refused outside sign-in and shows the sign-in
// page with the reason: a refusal is 401/403/409, an unreachable
// provider 503, never another 5xx.
func (h *handler) outsideFailed(c *gin.Context, name string, err error) {
	lang := c.GetString(ctxLang)
	status := http.StatusUnauthorized
	switch domain.ErrorCode(err) {
	case domain.EFORBIDDEN:
		status = http.StatusForbidden
	case domain.ECONFLICT:
		status = http.StatusConflict
	case domain.EUNAVAILABLE:
		status = http.StatusServiceUnavailable
	case domain.EUNAUTHORIZED, domain.EINVALID:
	default:
		h.fail(c, err)
		return
	}
	h.auditAs(c, domain.User{Name: "anonymous"}, domain.AuditLoginFailed, name, "outside sign-in: "+domain.ErrorMessage(err)+" from "+c.ClientIP())
	h.render(c, status, "login", translate(lang, "login.title"), "", h.loginData("", domain.ErrorMessage(err)))
}
