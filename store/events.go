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
// services to reconcile records their events at the cost of a few. On
// PostgreSQL that is two: the services' locks, then one statement that
// reads their newest events, counts the repeats, adds the rest and drops
// the oldest.
func (t *Tx) recordEvents(ctx context.Context, es []Event) error {
	names := make([]string, len(es))
	rows := make([]string, len(es))
	var input []any
	for i, e := range es {
		names[i] = e.Service
		rows[i] = `(?, ?, ?, ?, CAST(? AS BIGINT))`
		input = append(input, e.Service, e.Type, e.Reason, e.Message, e.Generation)
	}
	// e: the events to record; n: their services' newest events.
	with := `WITH e (service_name, type, reason, message, generation) AS (VALUES ` + strings.Join(rows, ", ") + `),
		n AS (SELECT x.service_name, x.seq, x.type, x.reason, x.message, x.generation
			FROM service_events x JOIN e ON x.service_name = e.service_name WHERE x.seq = ` + newestSeq("x") + `)`
	repeat := `UPDATE service_events SET count = count + 1, last_at = ?
		WHERE (service_name, seq) IN (SELECT n.service_name, n.seq FROM n JOIN e ON n.service_name = e.service_name WHERE ` + sameEvent + `)`
	add := `INSERT INTO service_events (` + eventCols + `)
		SELECT e.service_name, COALESCE(n.seq, 0) + 1, e.type, e.reason, e.message, e.generation, 1, ?, ?
		FROM e LEFT JOIN n ON n.service_name = e.service_name WHERE n.seq IS NULL OR NOT (` + sameEvent + `)`
	ts := now()
	if t.dialect == Postgres {
		// Two transactions numbering the same service's events queue here
		// rather than collide on (service_name, seq); other services' do
		// not. The keys are taken in their order, so that two transactions
		// taking several cannot each wait for the other's. The statement
		// after it reads what the lock waited for: one statement cannot.
		if _, err := t.exec(ctx, `SELECT COUNT(pg_advisory_xact_lock(7366726, k))
			FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(CAST(? AS text[])) AS n ORDER BY k) locks`, pq.Array(names)); err != nil {
			return err
		}
		// Its parts read one snapshot: the repeats and the additions are
		// told apart by the same newest events, and the oldest dropped
		// are those before an added one's seq.
		var xids []int64
		if err := t.sel(ctx, &xids, with+`,
			repeated AS (`+repeat+` RETURNING 1),
			added AS (`+add+` RETURNING service_name, seq),
			dropped AS (DELETE FROM service_events x USING added a
				WHERE x.service_name = a.service_name AND x.seq <= a.seq - ?)
			SELECT txid_current()`, append(input, ts, ts, ts, EventsPerService)...); err != nil {
			return err
		}
		t.xid = xids[0]
		return nil
	}
	// SQLite runs one writer at a time, and each statement reads what the
	// one before it wrote.
	if _, err := t.exec(ctx, with+` `+repeat, append(input, ts)...); err != nil {
		return err
	}
	var added []struct {
		Service string `db:"service_name"`
		Seq     int64  `db:"seq"`
	}
	if err := t.sel(ctx, &added, with+` `+add+` RETURNING service_name, seq`, append(input, ts, ts)...); err != nil {
		return err
	}
	// Events are numbered from 1: only a service whose added event is
	// numbered past the bound has any to drop, so most events (each
	// service's first fifty) need no statement for it.
	var full []string
	for _, a := range added {
		if a.Seq > EventsPerService {
			full = append(full, a.Service)
		}
	}
	if len(full) == 0 {
		return nil
	}
	q, args, err := t.in(`DELETE FROM service_events WHERE service_name IN (?) AND seq <= `+newestSeq("service_events")+` - ?`,
		full, EventsPerService)
	if err == nil {
		_, err = t.exec(ctx, q, args...)
	}
	return err
}

// newestSeq selects the seq of the newest event of the service of a row
// of events (service_events or its alias).
func newestSeq(events string) string {
	return `(SELECT MAX(m.seq) FROM service_events m WHERE m.service_name = ` + events + `.service_name)`
}

// sameEvent is true when the event e repeats its service's newest n (a
// retry failing alike, a resync finding the service ready again): it is
// counted, not added.
const sameEvent = `n.type = e.type AND n.reason = e.reason AND n.message = e.message AND n.generation = e.generation`

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
