package web

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

func (h *handler) loginData(next, msg string) loginData {
	return loginData{Next: next, Message: msg, JupyterHub: h.HubLogin != nil, OIDC: h.OIDCLogin != nil}
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

// outsideLogin is a provider's sign-in (sso.HubLogin, sso.OIDCLogin).
type outsideLogin interface {
	Begin(ctx context.Context, redirectURI, next string) (string, error)
	Finish(ctx context.Context, redirectURI, state, code string) (domain.User, string, error)
}

// beginOutside sends the browser to the provider (GET /login/NAME).
func (h *handler) beginOutside(l outsideLogin, callback string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if l == nil {
			h.fail(c, domain.Errorf(domain.ENOTFOUND, "this sign-in is not configured on this server"))
			return
		}
		to, err := l.Begin(c.Request.Context(), callbackURL(c.Request, callback), safeNext(c.Query("next")))
		if err != nil {
			h.outsideFailed(c, "", err)
			return
		}
		c.Redirect(http.StatusSeeOther, to)
	}
}

// finishOutside takes the provider's redirect (GET /login/NAME/callback)
// and starts the session like POST /login.
func (h *handler) finishOutside(l outsideLogin, callback, via string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if l == nil {
			h.fail(c, domain.Errorf(domain.ENOTFOUND, "this sign-in is not configured on this server"))
			return
		}
		if e := c.Query("error"); e != "" {
			h.outsideFailed(c, "", domain.Errorf(domain.EUNAUTHORIZED, "the provider did not sign you in: %s", e))
			return
		}
		u, next, err := l.Finish(c.Request.Context(), callbackURL(c.Request, callback), c.Query("state"), c.Query("code"))
		if err != nil {
			h.outsideFailed(c, u.Name, err)
			return
		}
		h.startSession(c, u, safeNext(next), via+" from "+c.ClientIP())
	}
}

// outsideRoutes mounts the outside sign-in routes; a provider that is
// not configured answers 404.
func (h *handler) outsideRoutes(p gin.IRouter) {
	var hub, oid outsideLogin
	if h.HubLogin != nil {
		hub = h.HubLogin
	}
	if h.OIDCLogin != nil {
		oid = h.OIDCLogin
	}
	p.GET("/login/jupyterhub", h.beginOutside(hub, "/login/jupyterhub/callback"))
	p.GET("/login/jupyterhub/callback", h.finishOutside(hub, "/login/jupyterhub/callback", "jupyterhub"))
	p.GET("/login/oidc", h.beginOutside(oid, "/login/oidc/callback"))
	p.GET("/login/oidc/callback", h.finishOutside(oid, "/login/oidc/callback", "oidc"))
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
