package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/document"
	"svcbridge/metrics"
)

// RequestIDHeader carries the request ID in and out: a caller's ID is
// kept, else one is made, so one ID follows a change through the logs.
const RequestIDHeader = "X-Request-ID"

// observe counts and times every request by route template (not by path,
// which would explode the label space) and logs it with its request ID.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	id := c.GetHeader(RequestIDHeader)
	// A caller's ID goes into logs and the answer's header: only text.
	if id == "" || len(id) > 64 || document.TextProblem(id) != "" {
		b := make([]byte, 8)
		rand.Read(b)
		id = hex.EncodeToString(b)
	}
	c.Header(RequestIDHeader, id)
	c.Set(RequestIDHeader, id)
	c.Next()
	route := c.FullPath()
	method := metrics.Method(c.Request.Method)
	attrs := []any{"request_id", id, "method", truncate(c.Request.Method, 32)}
	if route == "" {
		// The metric label stays fixed; the log says what was asked for.
		route = "unmatched"
		attrs = append(attrs, "path", truncate(c.Request.URL.EscapedPath(), 256))
	}
	code := c.Writer.Status()
	metrics.HTTPRequests.WithLabelValues(method, route, strconv.Itoa(code)).Inc()
	metrics.HTTPDuration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
	s.Logger.Log(c.Request.Context(), requestLevel(c.Request.Method, route, code), "request", append(attrs,
		"route", route, "status", code, "duration_ms", time.Since(start).Milliseconds())...)
}

// requestLevel is the level of a request's log line: an INFO log shows
// changes and refusals, not the routine reads that make most requests
// (lists, gets, watches, probes, scrapes, the agents' polls, their
// acknowledgements and reports); a server error is an ERROR.
func requestLevel(method, route string, code int) slog.Level {
	switch {
	case route == "/healthz" || route == "/readyz" || route == "/metrics":
		return slog.LevelDebug // a not-ready 503 is the probe's answer
	case code >= 500:
		return slog.LevelError
	case code >= 400:
		return slog.LevelInfo
	case method == http.MethodGet || method == http.MethodHead,
		method == http.MethodPatch && route == "/api/v3/agent/config/changes",
		method == http.MethodPut && route == "/api/v3/agent/router/status":
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// StatusClientClosedRequest is nginx's 499: the client hung up before its
// answer. A request failing because of that (its store query canceled) is
// logged at INFO and counted under 499, not as a server error that an
// alert on the 5xx rate would see.
const StatusClientClosedRequest = 499

// clientGone reports whether c's client hung up: net/http cancels a
// request's context when its connection closes.
func clientGone(c *gin.Context) bool {
	return errors.Is(c.Request.Context().Err(), context.Canceled)
}

// truncate cuts s to at most n bytes, so a hostile path cannot flood the log.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// requestLogger is the logger of a handler: it carries the request ID.
func (s *Server) requestLogger(c *gin.Context) *slog.Logger {
	return s.Logger.With("request_id", c.GetString(RequestIDHeader))
}
