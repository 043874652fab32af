package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

// Pages are the browser pages (package web), mounted on the API's router
// so that they share its middleware: recovery, logging, the edge checks
// and the body caps. The composition root builds them.
type Pages interface {
	Mount(r gin.IRouter, problem func(*gin.Context, error), tokens func(ctx context.Context, addr, path, token string) (domain.User, error))
}

// pageRoutes mounts the pages, when the server has them.
func (s *Server) pageRoutes(r *gin.Engine) {
	if s.Pages != nil {
		s.Pages.Mount(r, s.problem, s.Auth.User)
	}
}
