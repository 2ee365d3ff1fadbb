package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/document"
	"svcbridge/inventory"
	"svcbridge/store"
)

// agentKey is where authAgent leaves the calling agent in the gin context.
const agentKey = "svcbridge.agent"

// agentPullRoutes is the part of ioFog's agent API that edge agents poll:
// change flags, their acknowledgement, and the router config.
func (s *Server) agentPullRoutes(g *gin.RouterGroup) {
	a := g.Group("/agent", s.authAgent)
	a.GET("/config/changes", s.getAgentChanges)
	a.PATCH("/config/changes", s.ackAgentChanges)
	a.GET("/router", s.getOwnRouter)
}

func unauthenticated(format string, args ...any) *Error {
	return apiErr(http.StatusUnauthorized, "AuthenticationError", format, args...)
}

// authAgent identifies the agent by `Authorization: Bearer <token>`; only
// the token's hash is stored, so the lookup is by hash.
func (s *Server) authAgent(c *gin.Context) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(c.GetHeader("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		c.Header("WWW-Authenticate", `Bearer realm="svcbridge agent"`)
		fail(c, unauthenticated("Missing agent credential: send 'Authorization: Bearer <agent token>'"))
		return
	}
	a, err := txValue(s, c, func(tx *store.Tx, ctx context.Context) (inventory.Agent, error) {
		return tx.AgentByTokenHash(ctx, auth.HashAgentToken(token))
	})
	if errors.Is(err, store.ErrNotFound) {
		c.Header("WWW-Authenticate", `Bearer realm="svcbridge agent", error="invalid_token"`)
		fail(c, unauthenticated("Invalid agent token"))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(agentKey, a)
	c.Next()
}

func callingAgent(c *gin.Context) inventory.Agent {
	return c.MustGet(agentKey).(inventory.Agent)
}

func (s *Server) getAgentChanges(c *gin.Context) {
	a := callingAgent(c)
	ch, ok := read(s, c, func(tx *store.Tx, ctx context.Context) (store.Changes, error) {
		return tx.AgentChanges(ctx, a.UUID)
	})
	if ok {
		c.JSON(http.StatusOK, ch)
	}
}

// ackAgentChanges clears the flags of the changes the agent has applied,
// up to the lastUpdated it read; a newer change keeps its flag up.
func (s *Server) ackAgentChanges(c *gin.Context) {
	a := callingAgent(c)
	obj, ok := jsonDocument(c, document.ReadJSONObject)
	if !ok {
		return
	}
	last, err := document.JSONField[int64](obj, "lastUpdated", "integer")
	if err != nil {
		fail(c, err)
		return
	}
	if last == nil {
		fail(c, document.Missing("lastUpdated"))
		return
	}
	if *last < 0 {
		fail(c, badRequest("Field 'lastUpdated' must not be negative"))
		return
	}
	err = s.inTx(c, func(tx *store.Tx) error {
		return tx.AckChanges(c.Request.Context(), a.UUID, *last)
	})
	if err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) getOwnRouter(c *gin.Context) {
	a := callingAgent(c)
	cfg, ok := read(s, c, func(tx *store.Tx, ctx context.Context) ([]byte, error) {
		return routerConfig(ctx, tx, a, a.Name)
	})
	if ok {
		serveRouterDoc(c, cfg)
	}
}

// serveRouterDoc answers a router document with an ETag of its content, or
// 304 without a body when If-None-Match names it: an agent that polls an
// unchanged document gets no document.
func serveRouterDoc(c *gin.Context, doc []byte) {
	sum := sha256.Sum256(doc)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	c.Header("ETag", etag)
	if etagMatches(c.GetHeader("If-None-Match"), etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", doc)
}

// etagMatches reads If-None-Match: a list of entity tags (weak ones
// compare weakly, as RFC 9110 says for this header) or "*".
func etagMatches(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
