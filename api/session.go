package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/buildinfo"
)

// sessionRoutes are the ioFog controller's unauthenticated routes that
// potctl and the ioFog Go SDK call before every command: the status, and
// building a session from a refresh token or a password.
func (s *Server) sessionRoutes(g *gin.RouterGroup) {
	g.GET("/status", s.status)
	g.POST("/user/refresh", s.refreshSession)
	g.POST("/user/login", s.login)
}

// status answers in the reference controller's shape.
func (s *Server) status(c *gin.Context) {
	now := time.Now()
	c.JSON(http.StatusOK, gin.H{
		"status":    "online",
		"timestamp": now.UnixMilli(),
		"uptimeSec": now.Sub(s.started).Seconds(),
		"versions":  gin.H{"controller": buildinfo.Version()},
	})
}

func (s *Server) refreshSession(c *gin.Context) {
	var in struct {
		RefreshToken string `json:"refreshToken"`
	}
	if !sessionRequest(c, &in) {
		return
	}
	tokens, err := s.Sessions.Refresh(c.Request.Context(), in.RefreshToken)
	s.answerSession(c, tokens, err)
}

func (s *Server) login(c *gin.Context) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
		TOTP     string `json:"totp"`
	}
	if !sessionRequest(c, &in) {
		return
	}
	tokens, err := s.Sessions.Login(c.Request.Context(), in.Email, in.Password, in.TOTP)
	s.answerSession(c, tokens, err)
}

// sessionRequest decodes a session call's small JSON body into v, refusing
// unknown keys; when it fails it has answered 4xx and reports false.
func sessionRequest(c *gin.Context, v any) bool {
	body, err := readBody(c, "application/json")
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if derr := dec.Decode(v); derr != nil {
			err = badRequest("Invalid JSON: %v", derr)
		}
	}
	if err != nil {
		fail(c, err)
		return false
	}
	return true
}

func (s *Server) answerSession(c *gin.Context, tokens auth.Tokens, err error) {
	switch {
	case err == nil:
		c.JSON(http.StatusOK, tokens)
	case errors.Is(err, auth.ErrNoPasswordLogin):
		unauthorized(c, "svcbridge has no password login without OIDC: use an API token as your client's refresh token (README: Use with potctl)")
	case errors.Is(err, auth.ErrBadCredentials):
		// Why (expired, unknown, refused by the issuer) is for the log only.
		s.requestLogger(c).DebugContext(c.Request.Context(), "session refused", "error", err)
		unauthorized(c, "invalid credentials")
	default:
		s.requestLogger(c).WarnContext(c.Request.Context(), "identity provider unavailable", "error", err)
		c.Header("Retry-After", "5")
		fail(c, apiErr(http.StatusServiceUnavailable, "UnavailableError", "The identity provider could not be reached; try again"))
	}
}
