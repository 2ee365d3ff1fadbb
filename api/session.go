package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/buildinfo"
	"svcbridge/document"
	"svcbridge/wire"
)

// sessionRoutes are the ioFog controller's unauthenticated routes that
// potctl and the ioFog Go SDK call before every command: the status, and
// building a session from a refresh token or a password.
func (s *Server) sessionRoutes(g *gin.RouterGroup) {
	g.GET("/status", s.status)
	g.POST("/user/refresh", s.refreshSession)
	g.POST("/user/login", s.login)
}

// selfRoutes tell a signed-in user who the API takes them for.
func (s *Server) selfRoutes(g *gin.RouterGroup) {
	g.GET("/user/self", s.self)
}

// self answers the caller's name and role and the actions of the console
// it may take, as auth.Allowed decides them, so that the console offers
// only those.
func (s *Server) self(c *gin.Context) {
	p := c.MustGet(principalKey).(auth.Principal)
	c.JSON(http.StatusOK, wire.Self{Name: p.Subject, Role: string(p.Role), Actions: map[string]bool{
		"reconcileService": auth.Allowed(p.Role, http.MethodPost, "/api/v3/services/:name/reconcile"),
	}})
}

// status answers in the reference controller's shape.
func (s *Server) status(c *gin.Context) {
	now := time.Now()
	c.JSON(http.StatusOK, wire.Status{Status: "online", Timestamp: now.UnixMilli(), UptimeSec: now.Sub(s.started).Seconds(),
		Versions: wire.Versions{Controller: buildinfo.IofogAPIVersion, Svcbridge: buildinfo.Version()}})
}

var (
	refreshFields = document.NewFieldSet("refreshToken")
	loginFields   = document.NewFieldSet("email", "password", "totp")
)

func (s *Server) refreshSession(c *gin.Context) {
	in, ok := sessionRequest(c, refreshFields)
	if !ok {
		return
	}
	// A refresh token is a token: checked first, as bearer tokens are.
	tokens, err := s.Sessions.Refresh(c.Request.Context(), in["refreshToken"])
	if errors.Is(err, auth.ErrBadCredentials) && s.tokenFailed(c, in["refreshToken"], false) {
		return
	}
	s.answerSession(c, nil, tokens, err)
}

func (s *Server) login(c *gin.Context) {
	in, ok := sessionRequest(c, loginFields)
	if !ok {
		return
	}
	// The account is what a guesser aims at; the one-time code changes.
	a := newAttempt(c, in["email"], in["email"]+"\x00"+in["password"])
	if !s.admitAttempt(c, &a) {
		return
	}
	tokens, err := s.Sessions.Login(c.Request.Context(), in["email"], in["password"], in["totp"])
	s.answerSession(c, &a, tokens, err)
}

// sessionRequest reads a session call's JSON body with the API's strict
// reader: only the known string fields, an absent one read as "". When it
// fails it has answered 4xx and reports false.
func sessionRequest(c *gin.Context, known document.FieldSet) (map[string]string, bool) {
	obj, ok := jsonDocument(c, func(body []byte) (map[string]json.RawMessage, error) { return document.ReadJSONFields(body, known) })
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for key := range obj {
		v, err := document.JSONField[string](obj, key, "string")
		if err != nil {
			fail(c, err)
			return nil, false
		}
		out[key] = *v
	}
	return out, true
}

// answerSession answers a session call, recording in the limiter whether
// the credentials of a login (a; nil for a refresh, whose failure is
// counted by tokenFailed) were good.
func (s *Server) answerSession(c *gin.Context, a *authAttempt, tokens auth.Tokens, err error) {
	if a != nil {
		switch {
		case err == nil:
			s.authLimit.settle(a, true, time.Now())
		case errors.Is(err, auth.ErrBadCredentials):
			s.authLimit.settle(a, false, time.Now())
		default:
			s.authLimit.release(a) // not a failure of the credential
		}
	}
	switch {
	case err == nil:
		c.JSON(http.StatusOK, tokens)
	case errors.Is(err, auth.ErrNoPasswordLogin):
		unauthorized(c, "svcbridge has no password login without OIDC: use an API token as your client's refresh token (see docs/potctl.md)")
	case errors.Is(err, auth.ErrBadCredentials):
		// Why (expired, unknown, refused by the issuer) is for the log only.
		s.requestLogger(c).DebugContext(c.Request.Context(), "session refused", "error", err)
		unauthorized(c, "invalid credentials")
	case clientGone(c):
		fail(c, err) // not the identity provider's fault
	default:
		s.requestLogger(c).WarnContext(c.Request.Context(), "identity provider unavailable", "error", err)
		c.Header("Retry-After", "5")
		fail(c, apiErr(http.StatusServiceUnavailable, "UnavailableError", "The identity provider could not be reached; try again"))
	}
}
