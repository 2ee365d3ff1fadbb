package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/document"
	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/store"
)

// agentKey is where authAgent leaves the calling agent in the gin context,
// and agentHashKey its credential's hash.
const (
	agentKey     = "svcbridge.agent"
	agentHashKey = "svcbridge.agent.hash"
)

// agentPullRoutes is the part of ioFog's agent API that edge agents poll:
// change flags, their acknowledgement, and the router config.
func (s *Server) agentPullRoutes(g *gin.RouterGroup) {
	a := g.Group("/agent", s.authAgent)
	a.GET("/config/changes", s.getAgentChanges)
	a.PATCH("/config/changes", s.ackAgentChanges)
	a.GET("/router", s.getOwnRouter)
	a.PUT("/router/status", withBodyLimit(ReportMaxBody), s.reportRouter)
}

func unauthenticated(format string, args ...any) *Error {
	return apiErr(http.StatusUnauthorized, "AuthenticationError", format, args...)
}

// authAgent identifies the agent by `Authorization: Bearer <token>`; only
// the token's hash is stored, so the lookup is by hash, from memory while
// the store's change feed allows (a revoked token is refused on every
// replica within a second).
func (s *Server) authAgent(c *gin.Context) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(c.GetHeader("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		c.Header("WWW-Authenticate", `Bearer realm="svcbridge agent"`)
		fail(c, unauthenticated("Missing agent credential: send 'Authorization: Bearer <agent token>'"))
		return
	}
	hash := auth.HashAgentToken(token)
	a, err := s.Store.AgentByToken(c.Request.Context(), hash)
	if errors.Is(err, store.ErrNotFound) {
		var user bool
		if s.Auth != nil {
			_, userErr := s.Auth.Authenticate(c.Request.Context(), token)
			user = userErr == nil
		}
		if s.tokenFailed(c, token, user) {
			c.Abort()
			return
		}
		c.Header("WWW-Authenticate", `Bearer realm="svcbridge agent", error="invalid_token"`)
		fail(c, unauthenticated("Invalid agent token"))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(agentKey, a)
	c.Set(agentHashKey, hash)
	c.Next()
}

func callingAgent(c *gin.Context) inventory.Agent {
	return c.MustGet(agentKey).(inventory.Agent)
}

// getAgentChanges answers the agent's change flags, from memory while the
// store's change feed allows: what a fleet polls most.
func (s *Server) getAgentChanges(c *gin.Context) {
	ch, err := s.Store.PolledChanges(c.Request.Context(), callingAgent(c).UUID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, ch)
}

// ackFields are the fields of an acknowledgement.
var ackFields = document.NewFieldSet("lastUpdated")

// ackAgentChanges clears the flags of the changes the agent has applied,
// up to the lastUpdated it read; a newer change keeps its flag up.
func (s *Server) ackAgentChanges(c *gin.Context) {
	a := callingAgent(c)
	obj, ok := jsonDocument(c, func(body []byte) (map[string]json.RawMessage, error) { return document.ReadJSONFields(body, ackFields) })
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

// getOwnRouter answers the agent's router document. An unchanged poll
// (If-None-Match naming the version the store's poll cache holds) is a 304
// from memory; anything else reads the version and the document on one
// snapshot. With timeoutSeconds, an unchanged poll waits up to that long
// for a change before its 304 (a long poll: a router side learns of a
// change as it commits, with no fixed sleep).
func (s *Server) getOwnRouter(c *gin.Context) {
	a := callingAgent(c)
	ifNoneMatch := c.GetHeader("If-None-Match")
	wait, err := longPollWait(c)
	if err != nil {
		fail(c, err)
		return
	}
	if wait > 0 && ifNoneMatch != "" {
		var changed bool
		if a, changed = s.awaitRouterChange(c, a, ifNoneMatch, wait); !changed {
			return
		}
	}
	if ifNoneMatch != "" {
		if etag, err := s.pollETag(c.Request.Context(), a); err == nil && etagMatches(ifNoneMatch, etag) {
			serveRouterDoc(c, routerDoc{etag: etag, notModified: true})
			return
		}
	}
	if !a.HasRouter() {
		c.Header("ETag", noRouterETag)
	}
	doc, ok := read(s, c, func(tx *store.Tx, ctx context.Context) (routerDoc, error) {
		return s.routerDocument(ctx, tx, a, a.Name, ifNoneMatch)
	})
	if ok {
		serveRouterDoc(c, doc)
	}
}

// noRouterETag is the entity tag of "this agent has no router" (its 404),
// so that a router side can long-poll for the router coming back.
const noRouterETag = `"none"`

// MaxLongPoll bounds timeoutSeconds: a proxy in between may close an idle
// request sooner, and the client simply asks again.
const MaxLongPoll = 5 * time.Minute

// pollETag is the ETag a poll of a's router document compares with, from
// the store's poll cache: its router version's, or noRouterETag when it
// has no router.
func (s *Server) pollETag(ctx context.Context, a inventory.Agent) (string, error) {
	if !a.HasRouter() {
		return noRouterETag, nil
	}
	version, err := s.Store.PolledRouterVersion(ctx, a.UUID)
	if errors.Is(err, store.ErrNotFound) {
		return noRouterETag, nil
	}
	return etagOf(version), err
}

// longPollWait reads timeoutSeconds (0 when absent).
func longPollWait(c *gin.Context) (time.Duration, error) {
	raw, ok := c.GetQuery("timeoutSeconds")
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || time.Duration(n)*time.Second > MaxLongPoll {
		return 0, badRequest("Query parameter 'timeoutSeconds' must be an integer from 0 to %d", int(MaxLongPoll/time.Second))
	}
	return time.Duration(n) * time.Second, nil
}

// awaitRouterChange waits until the calling agent's router document (or
// its having none) differs from what ifNoneMatch names, or wait passes.
// It returns the agent as it is now and true to answer the change; on
// false it has answered (304 when nothing changed, 401 when its token
// was revoked meanwhile).
func (s *Server) awaitRouterChange(c *gin.Context, a inventory.Agent, ifNoneMatch string, wait time.Duration) (inventory.Agent, bool) {
	ctx := c.Request.Context()
	hash := c.GetString(agentHashKey)
	cur := a
	changed, err := awaitChange(c, ifNoneMatch, wait,
		func() (<-chan struct{}, func()) { return s.Store.WatchAgent(a.UUID) },
		func() time.Duration {
			// While the feed is not current, a change may come unannounced.
			if !s.Store.FeedCurrent() {
				return time.Second
			}
			return 0
		},
		func() (string, error) {
			var err error
			if cur, err = s.Store.AgentByToken(ctx, hash); err != nil {
				return "", err
			}
			return s.pollETag(ctx, cur)
		})
	switch {
	case errors.Is(err, store.ErrNotFound):
		fail(c, unauthenticated("Invalid agent token"))
	case err != nil:
		fail(c, err)
	case changed:
		return cur, true
	}
	return a, false
}

// awaitChange is a long poll's wait: it reads what is there now (read
// returns its ETag) until that differs from what ifNoneMatch names, and
// reports whether it does. On false without an error it has answered: a
// 304 with the ETag once wait passed, nothing when the client went. Before
// each read it registers the wait (watch), so that a change committed in
// between is not missed, and it reads again when the wait's channel
// closes, or after recheck (0: only then). A wait's answer may come after
// HTTP_WRITE_TIMEOUT: the request's own deadline follows the wait.
func awaitChange(c *gin.Context, ifNoneMatch string, wait time.Duration, watch func() (<-chan struct{}, func()), recheck func() time.Duration, read func() (string, error)) (changed bool, err error) {
	ctx := c.Request.Context()
	if wait > 0 {
		_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(wait + 30*time.Second))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		woken, stop := watch()
		etag, err := read()
		if err != nil || !etagMatches(ifNoneMatch, etag) {
			stop()
			return err == nil, err
		}
		var again <-chan time.Time
		if d := recheck(); d > 0 {
			again = time.After(d)
		}
		select {
		case <-woken:
		case <-again:
		case <-timer.C:
			stop()
			c.Header("ETag", etag)
			c.Status(http.StatusNotModified)
			return false, nil
		case <-ctx.Done():
			stop()
			return false, nil
		}
		stop()
	}
}

// reportRouter records what the agent's router side says of its router,
// acknowledging the changes the router holds (see wire.RouterReport).
func (s *Server) reportRouter(c *gin.Context) {
	a := callingAgent(c)
	// One report of an agent at a time, in this process: its router side
	// sends one after another, and a report may be up to ReportMaxBody
	// (tens of milliseconds to read), so an agent's credential, taken from
	// an edge host, cannot keep a core busy with reports sent at once.
	if _, busy := s.reporting.LoadOrStore(a.UUID, struct{}{}); busy {
		// Answered at once, its body unread: the connection closes rather
		// than wait for the rest of it.
		c.Header("Connection", "close")
		c.Header("Retry-After", "1")
		fail(c, apiErr(http.StatusTooManyRequests, "TooManyRequestsError",
			"A report of agent %s is being read: send one at a time", a.Name))
		return
	}
	defer s.reporting.Delete(a.UUID)
	r, ok := jsonDocument(c, routerconfig.DecodeReport)
	if !ok {
		return
	}
	err := s.inTx(c, func(tx *store.Tx) error {
		return tx.SaveRouterReport(c.Request.Context(), a.UUID, r)
	})
	if err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// routerDoc is an agent's router document as answered: its ETag, and its
// body unless the caller already has it.
type routerDoc struct {
	etag        string
	body        []byte
	notModified bool
}

// routerDocCacheSize is how many agents' assembled router documents one
// API process keeps.
const routerDocCacheSize = 1024

// routerDocument reads a's router document; ref names the agent in a 404.
// The ETag is the router's version, one row to read: a poll that names it
// (ifNoneMatch) costs nothing more. Otherwise the document is assembled
// from the base and svcbridge's objects, once per version and process.
func (s *Server) routerDocument(ctx context.Context, tx *store.Tx, a inventory.Agent, ref, ifNoneMatch string) (routerDoc, error) {
	if !a.HasRouter() {
		return routerDoc{}, notFound("Agent %s has no router (routerMode none)", ref)
	}
	version, err := tx.RouterVersion(ctx, a.UUID)
	if errors.Is(err, store.ErrNotFound) {
		return routerDoc{}, notFound("Agent %s has no router config", ref)
	}
	if err != nil {
		return routerDoc{}, err
	}
	etag := etagOf(version)
	if etagMatches(ifNoneMatch, etag) {
		return routerDoc{etag: etag, notModified: true}, nil
	}
	if doc, ok := s.routerDocs.Get(a.UUID); ok && doc.etag == etag {
		return doc, nil
	}
	base, err := tx.RouterConfig(ctx, a.UUID)
	if err != nil {
		return routerDoc{}, err
	}
	held, err := tx.RouterObjects(ctx, a.UUID, "")
	if err != nil {
		return routerDoc{}, err
	}
	body, err := routerconfig.Assemble(base, held)
	if err != nil {
		body = base // not a router document: served as stored, as before svcbridge's rows
	}
	doc := routerDoc{etag: etag, body: body}
	s.routerDocs.Add(a.UUID, doc)
	return doc, nil
}

// etagOf is the ETag of a router document's version.
func etagOf(version string) string { return `"` + version + `"` }

// serveRouterDoc answers a router document with its ETag, or 304 without
// a body when If-None-Match named it: an agent that polls an unchanged
// document gets no document.
func serveRouterDoc(c *gin.Context, doc routerDoc) {
	c.Header("ETag", doc.etag)
	if doc.notModified {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", doc.body)
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
