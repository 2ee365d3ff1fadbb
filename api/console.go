package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"svcbridge/console"
)

// consoleRoutes serve the web console at /console/ (and send / there). Its
// files are public, as the OpenAPI document is: what it shows comes from
// the API, with the user's token.
func (s *Server) consoleRoutes(r *gin.Engine) {
	files := gin.WrapH(http.StripPrefix("/console", console.Handler()))
	r.GET("/console/*path", files)
	r.GET("/", func(c *gin.Context) { c.Redirect(http.StatusFound, "/console/") })
}
