package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
)

// jupyterhubToken exchanges a learner's JupyterHub API token for an
// npugrade learner token (POST /api/v1/auth/jupyterhub, no npugrade
// auth): the notebook client signs in with the single-user server's
// JUPYTERHUB_API_TOKEN.
func (s *Server) jupyterhubToken(c *gin.Context) {
	if s.Services.JupyterHub == nil {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "this server trusts no JupyterHub (serve --jupyterhub-url)"))
		return
	}
	var in struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(c.Request.Body, 64<<10)).Decode(&in); err != nil {
		s.problem(c, domain.Errorf(domain.EINVALID, "the body must be JSON {\"token\": \"<JUPYTERHUB_API_TOKEN>\"}"))
		return
	}
	m, err := s.Services.JupyterHub.Token(c.Request.Context(), c.ClientIP(), in.Token)
	if err != nil {
		var th *accounts.Throttled
		if errors.As(err, &th) {
			c.Header("Retry-After", strconv.Itoa(int(math.Ceil(th.RetryAfter.Seconds()))))
		}
		s.problem(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"access_token": m.Token, "token_type": "Bearer", "scope": m.Scope, "user": m.User.Name})
}
