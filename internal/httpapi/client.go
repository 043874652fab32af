package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/pyclient"
)

// clientRoutes serve the notebook client without sign-in (it is how a
// learner signs in): the module itself, and a PEP 503 simple index for
// `pip install --index-url URL/client/simple npugrade`.
func (s *Server) clientRoutes(r gin.IRoutes) {
	r.GET("/client/npugrade.py", func(c *gin.Context) {
		c.Header("Content-Disposition", `inline; filename="npugrade.py"`)
		c.Data(http.StatusOK, "text/plain; charset=utf-8", pyclient.Module(s.baseURL(c)))
	})
	r.GET("/client/simple/", func(c *gin.Context) {
		c.Data(http.StatusOK, "text/html; charset=utf-8", pyclient.RootIndex())
	})
	r.GET("/client/simple/npugrade/", func(c *gin.Context) {
		_, sha, err := pyclient.Wheel(s.baseURL(c))
		if err != nil {
			s.problem(c, err)
			return
		}
		c.Data(http.StatusOK, "text/html; charset=utf-8", pyclient.ProjectIndex("../../"+pyclient.WheelName(), sha))
	})
	r.GET("/client/"+pyclient.WheelName(), func(c *gin.Context) {
		data, _, err := pyclient.Wheel(s.baseURL(c))
		if err != nil {
			s.problem(c, err)
			return
		}
		c.Data(http.StatusOK, "application/zip", data)
	})
}

// baseURL is the URL the client reached this server by (publicBase):
// what the served module defaults to.
func (s *Server) baseURL(c *gin.Context) string { return s.publicBase(c.Request) }
