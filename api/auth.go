package api

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/wire"
)

// principalKey is where authorize leaves the caller for handlers.
const principalKey = "principal"

// authorize lets a request through when its bearer token names a user
// whose role may call this route. 401 and 403 answer in the reference
// controller's shape (key "error"), plus our envelope's name and message.
func (s *Server) authorize(c *gin.Context) {
	token := auth.BearerToken(c.Request)
	if token == "" {
		unauthorizedAs(c, "Unauthorized: No authentication information found", "Authorization: Bearer <token> is required")
		return
	}
	var p auth.Principal
	err := errors.New("no authenticator is configured")
	if s.Auth != nil {
		p, err = s.Auth.Authenticate(c.Request.Context(), token)
	}
	if err != nil {
		// Why a token failed (expired, signature, audience) is for the log,
		// never for the caller.
		s.requestLogger(c).DebugContext(c.Request.Context(), "token rejected", "error", err)
		_, agentErr := s.Store.AgentByToken(c.Request.Context(), auth.HashAgentToken(token))
		if s.tokenFailed(c, token, agentErr == nil) {
			c.Abort()
			return
		}
		unauthorized(c, "the bearer token is not valid")
		return
	}
	if !auth.Allowed(p.Role, c.Request.Method, c.FullPath()) {
		msg := "role " + string(p.Role) + " may not " + c.Request.Method + " " + c.FullPath()
		c.AbortWithStatusJSON(http.StatusForbidden, wire.AuthError{Error: "Forbidden", Name: "AuthorizationError", Message: msg})
		return
	}
	c.Set(principalKey, p)
	c.Next()
}

// unauthorized answers 401 in the reference controller's shape (key
// "error") plus our envelope's name and message.
func unauthorized(c *gin.Context, message string) {
	unauthorizedAs(c, "Unauthorized: invalid or expired token", message)
}

func unauthorizedAs(c *gin.Context, reference, message string) {
	c.AbortWithStatusJSON(http.StatusUnauthorized, wire.AuthError{Error: reference, Name: "AuthenticationError", Message: message})
}
