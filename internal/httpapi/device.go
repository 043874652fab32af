package httpapi

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/problem"
)

// deviceGrantType is RFC 8628's grant type.
const deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

// deviceRoutes are device-code sign-in (no authentication: the client
// has no token yet) and the user's own tokens.
func (s *Server) deviceRoutes(r *gin.Engine, api *gin.RouterGroup) {
	r.POST("/api/v1/device/code", s.deviceCode)
	r.POST("/api/v1/device/token", s.deviceToken)
	api.GET("/tokens", s.ownTokens)
	api.DELETE("/tokens/:id", s.revokeOwnToken)
}

func (s *Server) deviceCode(c *gin.Context) {
	var body struct {
		ClientName string `json:"client_name" form:"client_name"`
	}
	if c.Request.ContentLength != 0 {
		if err := c.ShouldBind(&body); err != nil {
			s.problem(c, domain.Errorf(domain.EINVALID, "the body is not a form or JSON object with client_name"))
			return
		}
	}
	d, err := s.Services.Devices.Start(c.Request.Context(), body.ClientName, c.ClientIP())
	if err != nil {
		s.problem(c, err)
		return
	}
	base := s.publicBase(c.Request)
	c.JSON(http.StatusOK, gin.H{"device_code": d.DeviceCode, "user_code": d.UserCode,
		"verification_uri": base + "/device", "verification_uri_complete": base + "/device?code=" + d.UserCode,
		"expires_in": int(d.ExpiresIn.Seconds()), "interval": int(d.Interval.Seconds())})
}

func (s *Server) deviceToken(c *gin.Context) {
	if gt := c.PostForm("grant_type"); gt != deviceGrantType {
		s.deviceError(c, "unsupported_grant_type", "grant_type must be "+deviceGrantType)
		return
	}
	code := c.PostForm("device_code")
	if code == "" {
		s.deviceError(c, domain.PollInvalid, "device_code is required")
		return
	}
	p, err := s.Services.Devices.Poll(c.Request.Context(), code)
	if err != nil {
		s.problem(c, err)
		return
	}
	if p.Outcome == domain.PollIssued {
		c.Header("Cache-Control", "no-store")
		c.JSON(http.StatusOK, gin.H{"access_token": p.Token, "token_type": "Bearer", "scope": domain.ScopeLearner, "user": p.User.Name})
		return
	}
	detail := map[string]string{
		domain.PollPending:  "the sign-in is not approved yet; poll again after the interval",
		domain.PollSlowDown: "polled faster than the interval; it is now " + strconv.Itoa(int(p.Interval.Seconds())) + " s",
		domain.PollExpired:  "the sign-in code expired; start again",
		domain.PollDenied:   "the sign-in was denied",
		domain.PollInvalid:  "the device code is unknown or was used",
	}[p.Outcome]
	s.deviceError(c, p.Outcome, detail)
}

// deviceError is a 400 problem with RFC 8628 §3.5's error member.
func (s *Server) deviceError(c *gin.Context, code, detail string) {
	p := problem.New(http.StatusBadRequest, detail, c.Request.URL.Path, nil)
	p.Title = "Bad Request"
	c.Header("Cache-Control", "no-store")
	c.Header("Content-Type", problem.MediaType)
	c.Render(http.StatusBadRequest, deviceProblem{p, code})
}

type deviceProblem struct {
	problem.Detail
	Error string `json:"error"`
}

func (r deviceProblem) Render(w http.ResponseWriter) error { return jsonEncode(w, r) }

func (r deviceProblem) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", problem.MediaType)
}

// publicBase is the server's URL as its users reach it: --public-url,
// else the request's scheme and host, where X-Forwarded-Proto and
// X-Forwarded-Host count only from a trusted proxy.
func (s *Server) publicBase(r *http.Request) string {
	if s.PublicURL != "" {
		return strings.TrimRight(s.PublicURL, "/")
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if s.fromTrustedProxy(r) {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			scheme = p
		}
		if h := strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Host"), ",")[0]); h != "" && !strings.ContainsAny(h, "/\\ ") {
			host = h
		}
	}
	return scheme + "://" + host
}

func (s *Server) fromTrustedProxy(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	for _, p := range s.TrustedProxies {
		if p.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}

type tokenView struct {
	ID         int64   `json:"id"`
	Scope      string  `json:"scope"`
	Label      string  `json:"label"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at,omitempty"`
}

func (s *Server) ownTokens(c *gin.Context) {
	toks, err := s.Services.Devices.Tokens(c.Request.Context(), currentUser(c))
	if err != nil {
		s.problem(c, err)
		return
	}
	out := make([]tokenView, len(toks))
	for i, t := range toks {
		out[i] = tokenView{ID: t.ID, Scope: t.Scope, Label: t.Label, CreatedAt: t.CreatedAt.UTC().Format("2006-01-02T15:04:05Z07:00")}
		if t.LastUsedAt != nil {
			u := t.LastUsedAt.UTC().Format("2006-01-02T15:04:05Z07:00")
			out[i].LastUsedAt = &u
		}
	}
	c.JSON(http.StatusOK, gin.H{"tokens": out})
}

func (s *Server) revokeOwnToken(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "token %q not found", c.Param("id")))
		return
	}
	if err := s.Services.Devices.Revoke(c.Request.Context(), currentUser(c), id); err != nil {
		s.problem(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
