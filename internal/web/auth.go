package web

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

const sessionCookie = "npugrade_session"

// session requires a signed-in browser (and one of roles, when given).
// Anonymous requests are sent to the sign-in page and come back after it.
func (h *handler) session(roles ...domain.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, _ := c.Cookie(sessionCookie)
		s, err := h.Sessions.WebSessionByID(c.Request.Context(), id)
		if err != nil {
			if domain.ErrorCode(err) != domain.EUNAUTHORIZED {
				h.fail(c, err)
				return
			}
			c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request.URL.RequestURI()))
			c.Abort()
			return
		}
		c.Set(ctxSession, s)
		if !h.scope(c, s.User) {
			return
		}
		if len(roles) > 0 {
			ok := false
			for _, r := range roles {
				ok = ok || s.User.Role == r
			}
			if !ok {
				h.fail(c, domain.Errorf(domain.EFORBIDDEN, "forbidden"))
				return
			}
		}
		c.Next()
	}
}

// sameOrigin rejects cross-site form posts: browsers send Origin on every
// POST, and it must name this host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == "" // no Origin: not a browser form post (curl, tests)
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// csrf checks the form's per-session token and the Origin header.
func (h *handler) csrf() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !h.csrfOK(c, c.PostForm("csrf")) {
			h.csrfFail(c)
			return
		}
		c.Next()
	}
}

func (h *handler) csrfOK(c *gin.Context, token string) bool {
	s := sessionOf(c)
	return sameOrigin(c.Request) && s.CSRFToken != "" &&
		subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRFToken)) == 1
}

// multipartForm reads a file upload's multipart form of at most limit
// bytes (plus the form's own overhead) and checks its CSRF token (a
// multipart form is read here, not by the csrf middleware). tooLarge
// answers an upload over the limit; a form that cannot be read has no
// CSRF token either. When it returns true the caller removes the form's
// files (c.Request.MultipartForm.RemoveAll) when done.
func (h *handler) multipartForm(c *gin.Context, limit int64, tooLarge func()) bool {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit+64<<10)
	if err := c.Request.ParseMultipartForm(1 << 20); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge()
			return false
		}
		h.csrfFail(c)
		return false
	}
	if !h.csrfOK(c, c.Request.FormValue("csrf")) {
		_ = c.Request.MultipartForm.RemoveAll()
		h.csrfFail(c)
		return false
	}
	return true
}

func (h *handler) csrfFail(c *gin.Context) {
	lang := c.GetString(ctxLang)
	h.render(c, http.StatusForbidden, "error", translate(lang, "pt.403"), "", translate(lang, "csrf"))
	c.Abort()
}

func (h *handler) home(c *gin.Context) {
	c.Redirect(http.StatusSeeOther, homeOf(sessionOf(c).User.Role))
}

func homeOf(r domain.Role) string {
	switch r {
	case domain.RoleInstructor, domain.RoleAdmin:
		return "/dashboard"
	}
	return "/exercises"
}

type loginData struct {
	Next    string
	Message string
	// JupyterHub and OIDC show the outside sign-in buttons.
	JupyterHub, OIDC bool
}

func (h *handler) loginPage(c *gin.Context) {
	lang := c.GetString(ctxLang)
	h.render(c, http.StatusOK, "login", translate(lang, "login.title"), "", h.loginData(safeNext(c.Query("next")), ""))
}

// safeNext keeps only a local path, so the sign-in page cannot redirect
// to another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return ""
	}
	return next
}

// login signs in with an API token (form field "token") and sets the
// session cookie: HttpOnly, SameSite=Lax, Secure behind TLS.
func (h *handler) login(c *gin.Context) {
	lang := c.GetString(ctxLang)
	next := safeNext(c.PostForm("next"))
	if !sameOrigin(c.Request) {
		h.csrfFail(c)
		return
	}
	u, err := h.userByToken(c, strings.TrimSpace(c.PostForm("token")))
	msg := ""
	switch {
	case domain.ErrorCode(err) == domain.ERATELIMIT:
		h.refused(c, err, func(status int) {
			h.render(c, status, "login", translate(lang, "login.title"), "", h.loginData(next, domain.ErrorMessage(err)))
		})
		return
	case domain.ErrorCode(err) == domain.EUNAUTHORIZED:
		msg = "login.bad"
	case err != nil:
		h.fail(c, err)
		return
	case u.Role == domain.RoleRunner:
		msg = "login.runner"
	}
	if msg != "" {
		actor := u
		if actor.Name == "" {
			actor.Name = "anonymous" // an unknown token names nobody
		}
		h.auditAs(c, actor, domain.AuditLoginFailed, u.Name, msg+" from "+c.ClientIP())
		h.render(c, http.StatusUnauthorized, "login", translate(lang, "login.title"), "", h.loginData(next, translate(lang, msg)))
		return
	}
	h.startSession(c, u, next, "from "+c.ClientIP())
}

// startSession signs u in: the session cookie (HttpOnly, SameSite=Lax,
// Secure behind TLS), an audit entry, and a redirect to next or u's home.
func (h *handler) startSession(c *gin.Context, u domain.User, next, detail string) {
	if _, err := h.Sessions.DeleteExpiredWebSessions(c.Request.Context()); err != nil {
		h.Log.Warn("delete expired sessions", "err", err)
	}
	id, s, err := h.Sessions.CreateWebSession(c.Request.Context(), u.ID, h.SessionTTL)
	if err != nil {
		h.fail(c, err)
		return
	}
	if s.User.Role != u.Role {
		// A learner-scoped token of staff: a session would have the
		// user's full role.
		if err := h.Sessions.DeleteWebSession(c.Request.Context(), id); err != nil {
			h.fail(c, err)
			return
		}
		h.auditAs(c, u, domain.AuditLoginFailed, u.Name, "login.scoped from "+c.ClientIP())
		lang := c.GetString(ctxLang)
		h.render(c, http.StatusUnauthorized, "login", translate(lang, "login.title"), "", h.loginData(next, translate(lang, "login.scoped")))
		return
	}
	h.auditAs(c, u, domain.AuditLogin, u.Name, detail)
	ck := &http.Cookie{Name: sessionCookie, Value: id, Path: "/", MaxAge: int(h.SessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: isTLS(c.Request)}
	if c.GetBool(ctxLTI) && isTLS(c.Request) {
		// An LTI launch runs in the LMS's iframe: a cross-site frame
		// sends only SameSite=None cookies, which must be Secure (plain
		// http is refused for launches except on loopback, for tests).
		ck.SameSite = http.SameSiteNoneMode
	}
	http.SetCookie(c.Writer, ck)
	if next == "" {
		next = homeOf(s.User.Role)
	}
	c.Redirect(http.StatusSeeOther, next)
}

func (h *handler) logoutPage(c *gin.Context) {
	lang := c.GetString(ctxLang)
	h.render(c, http.StatusOK, "logout", translate(lang, "logout.title"), "", nil)
}

func (h *handler) logout(c *gin.Context) {
	id, _ := c.Cookie(sessionCookie)
	if err := h.Sessions.DeleteWebSession(c.Request.Context(), id); err != nil {
		h.fail(c, err)
		return
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: isTLS(c.Request)})
	c.Redirect(http.StatusSeeOther, "/login")
}

// scope puts a staff member's scope (the cohorts they read, narrowed by
// the "cohort" query parameter) into the request's context, once, for
// every read below the page (policy.Service.Scoped); false when it
// answered an error page instead.
func (h *handler) scope(c *gin.Context, u domain.User) bool {
	if h.Policy == nil || !u.Role.CanSeeAll() {
		return true
	}
	ctx, err := h.Policy.Scoped(c.Request.Context(), u, c.Query("cohort"))
	if err != nil {
		h.fail(c, err)
		return false
	}
	c.Request = c.Request.WithContext(ctx)
	return true
}
