package api

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"svcbridge/store"
	"svcbridge/wire"
)

// Events are recorded by the store in the transactions that make the
// changes (see store.RecordEvent); these routes read them.

func (s *Server) eventRoutes(g *gin.RouterGroup) {
	g.GET("/events", func(c *gin.Context) { s.serveEvents(c, "") })
	g.GET("/services/:name/events", func(c *gin.Context) { s.serveEvents(c, c.Param("name")) })
}

// serveEvents answers the events of a service (all when name is ""),
// newest first, paged by ?limit= and ?continue= as the other lists are. A
// service's events outlive it; a name that has neither a service nor
// events is a 404.
func (s *Server) serveEvents(c *gin.Context, name string) {
	ctx := c.Request.Context()
	q, err := parsePage(c.Query("limit"), c.Query("continue"))
	if err != nil {
		fail(c, err)
		return
	}
	limit := q.limit
	if limit > 0 {
		limit++ // one more tells whether a next page exists
	}
	var events []store.Event
	err = s.readTx(c, func(tx *store.Tx) (err error) {
		if events, err = tx.ListEvents(ctx, name, store.EventCursor(q.after), limit); err != nil || name == "" || len(events) > 0 {
			return err
		}
		_, err = lookupService(ctx, tx, name)
		return err
	})
	switch {
	case errors.Is(err, store.ErrBadCursor):
		err = badContinue()
	case errors.Is(err, store.ErrNotFound):
		err = serviceNotFound(name)
	}
	if err != nil {
		fail(c, err)
		return
	}
	if q.limit > 0 && len(events) > q.limit {
		events = events[:q.limit]
		c.Header(ContinueHeader, continueToken(events[len(events)-1].Cursor()))
	}
	out := make([]wire.Event, len(events))
	for i, e := range events {
		out[i] = wire.Event{Service: e.Service, Type: e.Type, Reason: e.Reason, Message: e.Message, Generation: e.Generation,
			Count: e.Count, FirstTimestamp: wire.Time(e.FirstTimestamp), LastTimestamp: wire.Time(e.LastTimestamp)}
	}
	c.JSON(http.StatusOK, out)
}
