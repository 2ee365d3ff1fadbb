package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDocument is the hand-written OpenAPI 3 description of every route
// New serves; openapi_test.go fails when the two drift apart.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPIRoutes serves the document at /openapi.json, for clients and
// generators.
func (s *Server) openAPIRoutes(r *gin.Engine) {
	r.GET("/openapi.json", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", openAPIDocument)
	})
}
