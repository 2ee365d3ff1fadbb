package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"svcbridge/wire"
)

// settingsRoutes publish the settings a client needs to write what this
// server reads as meant (svcbridge import checks its tag prefix and bridge
// ports against them): read-only, for every role.
func (s *Server) settingsRoutes(g *gin.RouterGroup) {
	g.GET("/settings", func(c *gin.Context) {
		c.JSON(http.StatusOK, wire.Settings{
			ServiceAnnotationTag: s.Tags.Prefix,
			BridgePortsRange:     s.BridgePortsRaw,
			BridgePorts:          wire.PortRange{First: s.BridgePorts.First, Last: s.BridgePorts.Last},
			ControlPlane:         string(s.ControlPlane),
		})
	})
}
