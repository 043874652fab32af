package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/lti"
)

const ctxLTI = "web.lti"

// ltiRoutes mounts the LTI 1.3 tool's browser routes: the login
// initiation (GET or POST, as platforms send either), the launch (the
// platform's form post of the id_token) and Deep Linking's exercise
// choice. Without a tool they answer 404. /lti/jwks is mounted by mount.
func (h *handler) ltiRoutes(p gin.IRouter) {
	p.GET("/lti/login", h.ltiLogin)
	p.POST("/lti/login", h.ltiLogin)
	p.POST("/lti/launch", h.ltiLaunch)
	// The course role decides (lti.Tool.BeginDeepLink keeps a request
	// only for the course's instructor, bound to them), not the global one.
	p.GET("/lti/deep-link", h.session(), h.deepLinkPage)
	p.POST("/lti/deep-link", h.session(), h.csrf(), h.deepLinkAnswer)
	p.GET("/admin/lti", h.session(domain.RoleAdmin), h.ltiAdminPage)
	p.POST("/admin/lti", h.session(domain.RoleAdmin), h.csrf(), h.addLTIPlatform)
}

// ltiJWKS serves npugrade's public keys (GET /lti/jwks).
func (h *handler) ltiJWKS(c *gin.Context) {
	if h.LTI == nil {
		c.Status(http.StatusNotFound)
		return
	}
	b, err := h.LTI.Keys.JWKS(c.Request.Context())
	if err != nil {
		h.Log.Error("lti jwks", "err", err)
		c.Header("Retry-After", "5")
		c.Status(http.StatusServiceUnavailable)
		return
	}
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/json", b)
}

// ltiParam reads a parameter of the query or the form.
func ltiParam(c *gin.Context, name string) string {
	if v := c.PostForm(name); v != "" {
		return v
	}
	return c.Query(name)
}

func (h *handler) ltiLogin(c *gin.Context) {
	if h.LTI == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "LTI is not configured on this server"))
		return
	}
	to, err := h.LTI.Login(c.Request.Context(), lti.LoginRequest{Issuer: ltiParam(c, "iss"), LoginHint: ltiParam(c, "login_hint"),
		TargetLinkURI: ltiParam(c, "target_link_uri"), MessageHint: ltiParam(c, "lti_message_hint"),
		ClientID: ltiParam(c, "client_id"), DeploymentID: ltiParam(c, "lti_deployment_id")})
	if err != nil {
		h.ltiFailed(c, err)
		return
	}
	c.Redirect(http.StatusFound, to)
}

// ltiLaunch takes the platform's form post: the launch is checked
// (lti.Tool.Launch), the user signed in with a cookie that survives the
// LMS's iframe, and sent to the exercise, their home, or the Deep
// Linking choice.
func (h *handler) ltiLaunch(c *gin.Context) {
	if h.LTI == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "LTI is not configured on this server"))
		return
	}
	if !isTLS(c.Request) && !lti.Loopback(hostOnly(c.Request.Host)) {
		h.ltiFailed(c, &lti.Error{Reason: "https", Err: domain.Errorf(domain.EFORBIDDEN, "LTI launches need https")})
		return
	}
	if e := c.PostForm("error"); e != "" {
		h.ltiFailed(c, &lti.Error{Reason: "platform", Err: domain.Errorf(domain.EUNAUTHORIZED, "the platform refused the launch: %s %s", e, c.PostForm("error_description"))})
		return
	}
	l, err := h.LTI.Launch(c.Request.Context(), c.PostForm("id_token"), c.PostForm("state"))
	if err != nil {
		h.ltiFailed(c, err)
		return
	}
	next := l.Target()
	if l.Message == lti.MessageDeepLinking {
		key, err := h.LTI.BeginDeepLink(c.Request.Context(), l)
		if err != nil {
			h.ltiFailed(c, err)
			return
		}
		next = "/lti/deep-link?k=" + url.QueryEscape(key)
	}
	c.Set(ctxLTI, true)
	h.startSession(c, l.User, next, "lti from "+l.Platform.Issuer+" course "+l.Context.ContextID+" as "+string(l.Role)+" from "+c.ClientIP())
}

func hostOnly(hostport string) string {
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.HasSuffix(hostport, "]") {
		hostport = hostport[:i]
	}
	return strings.Trim(hostport, "[]")
}

// ltiFailed records a refused LTI login or launch in the audit log and
// shows why, in the reader's language: a refusal is 401 or 403 (404 for
// an unknown platform), a platform whose keys cannot be read 503, never
// another 5xx.
func (h *handler) ltiFailed(c *gin.Context, err error) {
	lang := c.GetString(ctxLang)
	reason := lti.Reason(err)
	status := http.StatusUnauthorized
	switch domain.ErrorCode(err) {
	case domain.EFORBIDDEN:
		status = http.StatusForbidden
	case domain.ENOTFOUND:
		status = http.StatusNotFound
	case domain.ECONFLICT:
		status = http.StatusConflict
	case domain.EINVALID:
		status = http.StatusBadRequest
	case domain.EUNAVAILABLE:
		status = http.StatusServiceUnavailable
		c.Header("Retry-After", "30")
	case domain.EUNAUTHORIZED:
	default:
		h.fail(c, err)
		return
	}
	if reason == "" {
		reason = "claims"
	}
	h.auditAs(c, domain.User{Name: "anonymous"}, domain.AuditLoginFailed, "lti "+reason,
		"lti launch refused: "+domain.ErrorMessage(err)+" from "+c.ClientIP())
	msg := translate(lang, "lti.why."+reason) + " (" + domain.ErrorMessage(err) + ")"
	h.render(c, status, "error", translate(lang, "lti.refused"), "", msg)
}

type deepLinkData struct {
	Key       string
	Exercises []exerciseChoice
}

type exerciseChoice struct{ ID, Title string }

func (h *handler) deepLinkPage(c *gin.Context) {
	if h.LTI == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "LTI is not configured on this server"))
		return
	}
	lang := c.GetString(ctxLang)
	d := deepLinkData{Key: c.Query("k")}
	for _, ex := range h.Catalog.List() {
		title := ex.Title
		if lang == langEN && ex.TitleEN != "" {
			title = ex.TitleEN
		}
		d.Exercises = append(d.Exercises, exerciseChoice{ID: ex.ID, Title: title})
	}
	h.render(c, http.StatusOK, "deeplink", translate(lang, "lti.dl.title"), "", d)
}

type autoPostData struct {
	Action, JWT string
}

// deepLinkAnswer signs the LtiDeepLinkingResponse and posts it back to
// the platform from the browser (a page that submits itself; the
// platform's return URL is the only other place this page's form may go).
func (h *handler) deepLinkAnswer(c *gin.Context) {
	if h.LTI == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "LTI is not configured on this server"))
		return
	}
	_ = c.Request.ParseForm()
	resp, err := h.LTI.DeepLink(c.Request.Context(), c.PostForm("k"), sessionOf(c).User, c.Request.PostForm["exercise"])
	if err != nil {
		h.ltiFailed(c, err)
		return
	}
	u, err := url.Parse(resp.ReturnURL)
	if err != nil || !lti.SecureURL(resp.ReturnURL) {
		h.ltiFailed(c, &lti.Error{Reason: "claims", Err: domain.Errorf(domain.EINVALID, "the platform's return URL %q is not https", resp.ReturnURL)})
		return
	}
	c.Header("Content-Security-Policy", strings.Replace(csp, "form-action 'self'", "form-action "+u.Scheme+"://"+u.Host, 1))
	lang := c.GetString(ctxLang)
	h.render(c, http.StatusOK, "autopost", translate(lang, "lti.dl.sending"), "", autoPostData{Action: resp.ReturnURL, JWT: resp.JWT})
}

// LTIPlatforms registers and lists LMS platforms (lti.Platforms).
type LTIPlatforms interface {
	Add(ctx context.Context, p domain.LTIPlatform) (domain.LTIPlatform, error)
	List(ctx context.Context) ([]domain.LTIPlatform, error)
}

type ltiAdminData struct {
	Base      string
	Serving   bool
	Platforms []domain.LTIPlatform
	Message   string
	Problems  []string
	Added     string
}

func (h *handler) ltiAdminPage(c *gin.Context) { h.renderLTIAdmin(c, http.StatusOK, ltiAdminData{}) }

func (h *handler) renderLTIAdmin(c *gin.Context, status int, d ltiAdminData) {
	if h.Platforms == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "LTI is not available on this server"))
		return
	}
	ps, err := h.Platforms.List(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	d.Platforms, d.Serving = ps, h.LTI != nil
	if h.LTI != nil {
		d.Base = strings.TrimRight(h.LTI.PublicURL, "/")
	} else {
		d.Base = strings.TrimSuffix(callbackURL(c.Request, "/"), "/")
	}
	h.render(c, status, "lti_admin", translate(c.GetString(ctxLang), "lti.admin.title"), "lti", d)
}

// addLTIPlatform registers a platform from the admin page; every
// problem of a bad one is shown at once (422, as the API would).
func (h *handler) addLTIPlatform(c *gin.Context) {
	if h.Platforms == nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "LTI is not available on this server"))
		return
	}
	p := domain.LTIPlatform{Name: strings.TrimSpace(c.PostForm("name")), Issuer: c.PostForm("issuer"), ClientID: c.PostForm("client_id"),
		DeploymentIDs: strings.Split(c.PostForm("deployment_ids"), ","), AuthLoginURL: strings.TrimSpace(c.PostForm("auth_url")),
		TokenURL: strings.TrimSpace(c.PostForm("token_url")), JWKSURL: strings.TrimSpace(c.PostForm("jwks_url")), Audience: strings.TrimSpace(c.PostForm("audience"))}
	got, err := h.Platforms.Add(c.Request.Context(), p)
	if err != nil {
		h.refused(c, err, func(status int) {
			h.renderLTIAdmin(c, status, ltiAdminData{Message: domain.ErrorMessage(err), Problems: domain.ErrorProblems(err)})
		})
		return
	}
	h.audit(c, domain.AuditLTIPlatformAdded, got.Issuer, "client id "+got.ClientID)
	h.renderLTIAdmin(c, http.StatusCreated, ltiAdminData{Added: got.Name + " (" + got.Issuer + ")"})
}
