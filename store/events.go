package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Event is something that happened to a service, as kubectl's Events.
type Event struct {
	Service    string `db:"service_name" json:"service"`
	Seq        int64  `db:"seq" json:"-"`
	Type       string `db:"type" json:"type"`
	Reason     string `db:"reason" json:"reason"`
	Message    string `db:"message" json:"message"`
	Generation int64  `db:"generation" json:"generation,omitempty"`
	// Count is how many times the event happened in a row; FirstTimestamp
	// and LastTimestamp when it first and last did.
	Count          int64     `db:"count" json:"count"`
	FirstTimestamp time.Time `db:"first_at" json:"firstTimestamp"`
	LastTimestamp  time.Time `db:"last_at" json:"lastTimestamp"`
}

// Event types, as Kubernetes': Warning is what an operator must look at.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event reasons.
const (
	ReasonCreated            = "Created"
	ReasonUpdated            = "Updated"
	ReasonDeleted            = "Deleted"
	ReasonReconcileRequested = "ReconcileRequested"
	ReasonReady              = "Ready"
	ReasonFailed             = "Failed"
)

// EventsPerService is how many events RecordEvent keeps of one service:
// enough for a day of changes, few enough that a fleet's history stays
// small.
const EventsPerService = 50

// RecordEvent adds e (its Service, Type, Reason, Message and Generation)
// as the service's newest event, or counts it again when it repeats the
// newest (see sameEvent), and drops the service's events beyond
// EventsPerService. Call it in the transaction that makes the change.
func (t *Tx) RecordEvent(ctx context.Context, e Event) error {
	return t.recordEvents(ctx, []Event{e})
}

// recordEvents records es, each of another service and at most 500 (an
// IN list's worth), as RecordEvent records one, in the same few
// statements however many they are: a change that asks thousands of
// services to reconcile records their events at the cost of a few.
func (t *Tx) recordEvents(ctx context.Context, es []Event) error {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Service
	}
	if t.dialect == Postgres {
		// Two transactions numbering the same service's events queue here
		// rather than collide on (service_name, seq); other services' do
		// not. The keys are taken in their order, so that two transactions
		// taking several cannot each wait for the other's.
		if _, err := t.exec(ctx, `SELECT COUNT(pg_advisory_xact_lock(7366726, k))
			FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(CAST(? AS text[])) AS n ORDER BY k) locks`, pq.Array(names)); err != nil {
			return err
		}
	}
	q, args, err := t.in(`SELECT `+eventCols+` FROM service_events e WHERE service_name IN (?) AND seq = `+newestSeq("e"), names)
	var newest []Event
	if err == nil {
		err = t.sel(ctx, &newest, q, args...)
	}
	if err != nil {
		return err
	}
	last := make(map[string]Event, len(newest))
	for _, n := range newest {
		last[n.Service] = n
	}
	ts := now()
	var repeats, full []string // full: services with more than EventsPerService events now
	var rows []string
	var values []any
	for _, e := range es {
		n, ok := last[e.Service]
		if ok && sameEvent(n, e) {
			repeats = append(repeats, e.Service)
			continue
		}
		seq := n.Seq + 1 // seqs start at 1
		rows = append(rows, `(?, ?, ?, ?, ?, ?, 1, ?, ?)`)
		values = append(values, e.Service, seq, e.Type, e.Reason, e.Message, e.Generation, ts, ts)
		if seq > EventsPerService {
			full = append(full, e.Service)
		}
	}
	if len(rows) > 0 {
		if err := t.write(ctx, `INSERT INTO service_events (`+eventCols+`) VALUES `+strings.Join(rows, ", "), values...); err != nil {
			return err
		}
	}
	if len(repeats) > 0 {
		if q, args, err = t.in(`UPDATE service_events SET count = count + 1, last_at = ?
			WHERE service_name IN (?) AND seq = `+newestSeq("service_events"), ts, repeats); err == nil {
			err = t.write(ctx, q, args...)
		}
		if err != nil {
			return err
		}
	}
	if len(full) == 0 {
		return nil
	}
	if q, args, err = t.in(`DELETE FROM service_events WHERE service_name IN (?) AND seq <= `+newestSeq("service_events")+` - ?`,
		full, EventsPerService); err == nil {
		_, err = t.exec(ctx, q, args...)
	}
	return err
}

// newestSeq selects the seq of the newest event of the service of a row
// of events (service_events or its alias).
func newestSeq(events string) string {
	return `(SELECT MAX(m.seq) FROM service_events m WHERE m.service_name = ` + events + `.service_name)`
}

// sameEvent reports whether e repeats newest (a retry failing alike, a
// resync finding the service ready again): counted, not added.
func sameEvent(newest, e Event) bool {
	return newest.Type == e.Type && newest.Reason == e.Reason && newest.Message == e.Message && newest.Generation == e.Generation
}

const eventCols = `service_name, seq, type, reason, message, generation, count, first_at, last_at`

// EventCursor is where a page of events ends: the next page starts after
// it.
type EventCursor []string

// Cursor is the position of e in ListEvents' order.
func (e Event) Cursor() EventCursor {
	return EventCursor{e.LastTimestamp.UTC().Format(time.RFC3339Nano), e.Service, strconv.FormatInt(e.Seq, 10)}
}

// ListEvents returns up to limit events (0: all), newest first, of one
// service or of all when service is "", starting after the event at
// after (nil: from the newest).
func (t *Tx) ListEvents(ctx context.Context, service string, after EventCursor, limit int) ([]Event, error) {
	query, args := `SELECT `+eventCols+` FROM service_events WHERE 1 = 1`, []any{}
	if service != "" {
		query, args = query+` AND service_name = ?`, append(args, service)
	}
	if after != nil {
		at, seq, err := parseCursor(after)
		if err != nil {
			return nil, err
		}
		// Row values compare as the ORDER BY sorts (descending here).
		query += ` AND (last_at, ` + t.binary("service_name") + `, seq) < (?, ?, ?)`
		args = append(args, at, after[1], seq)
	}
	query += ` ORDER BY last_at DESC, ` + t.binary("service_name") + ` DESC, seq DESC`
	if limit > 0 {
		query, args = query+` LIMIT ?`, append(args, limit)
	}
	var es []Event
	if err := t.sel(ctx, &es, query, args...); err != nil {
		return nil, err
	}
	for i := range es {
		es[i].FirstTimestamp, es[i].LastTimestamp = es[i].FirstTimestamp.UTC(), es[i].LastTimestamp.UTC()
	}
	return es, nil
}

// ErrBadCursor is a cursor that Event.Cursor did not make.
var ErrBadCursor = fmt.Errorf("not an event cursor")

func parseCursor(c EventCursor) (time.Time, int64, error) {
	if len(c) != 3 {
		return time.Time{}, 0, ErrBadCursor
	}
	at, err := time.Parse(time.RFC3339Nano, c[0])
	if err != nil {
		return time.Time{}, 0, ErrBadCursor
	}
	seq, err := strconv.ParseInt(c[2], 10, 64)
	if err != nil {
		return time.Time{}, 0, ErrBadCursor
	}
	return at, seq, nil
}

// RecordReconciled records the outcome of reconciling generation gen of a
// service, in the transaction that stores it: ready, or failed with
// reason. The agents' listeners get no events: the agent queue writes
// them in batches after the pass, an event per agent would be a fleet's
// worth of rows per change, and describe's distribution already counts
// them by state (written, acknowledged).
func (t *Tx) RecordReconciled(ctx context.Context, name string, gen int64, reason *string) error {
	if reason != nil {
		return t.RecordEvent(ctx, Event{Service: name, Type: EventWarning, Reason: ReasonFailed, Generation: gen, Message: *reason})
	}
	return t.RecordEvent(ctx, Event{Service: name, Type: EventNormal, Reason: ReasonReady, Generation: gen,
		Message: fmt.Sprintf("generation %d reconciled: its connector and hub listener are in place", gen)})
}
