package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"svcbridge/wire"
)

// Event is one of a service's events, as GET /api/v3/events answers it.
type Event = wire.Event

// eventsPath is where the events of a service (every service when "")
// are listed.
func eventsPath(service string) string {
	if service == "" {
		return "/api/v3/events"
	}
	return "/api/v3/services/" + esc(service) + "/events"
}

// Events lists every event of a service (of all when service is ""),
// newest first, and the raw answer.
func (c *Client) Events(ctx context.Context, service string) (events []Event, raw []byte, err error) {
	items, err := c.listAll(ctx, eventsPath(service))
	if err != nil {
		return nil, nil, err
	}
	raw = jsonArray(items, func(r json.RawMessage) json.RawMessage { return r })
	return events, raw, json.Unmarshal(raw, &events)
}

// LastEvents lists a service's newest n events, newest first.
func (c *Client) LastEvents(ctx context.Context, service string, n int) (events []Event, err error) {
	_, err = c.getJSON(ctx, withQuery(eventsPath(service), "limit", fmt.Sprint(n)), &events)
	return events, err
}

// eventAge is kubectl's AGE of an event: "5m", or "5m (x3 over 2h)" for
// one that repeated.
func eventAge(e Event, now time.Time) string {
	if e.Count <= 1 {
		return age(e.LastTimestamp, now)
	}
	return fmt.Sprintf("%s (x%d over %s)", age(e.LastTimestamp, now), e.Count, age(e.FirstTimestamp, now))
}

func eventsCmd(o Options) *cobra.Command {
	var c conn
	var out outputFlag
	var svc string
	var noHeaders bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List what happened to the services, newest first",
		Long: `List the services' events, newest first, as kubectl events does: created,
updated, deleted, reconcile requested (reconcile, reconcile --failed), ready (with
how many agents its listener was written on) and failed (with the reason). A repeat
of a service's newest event counts up ("x3 over 2h") instead of adding a line. The
server keeps the last 50 events of each service, of deleted services too.
With --service, only that service's; describe service ends with them as well.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge events
  svcbridge events --service checkout
  svcbridge events -o json`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			events, raw, err := client.Events(cmd.Context(), svc)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.format != "" {
				return printRaw(w, out.format, raw)
			}
			return printEvents(w, events, time.Now(), noHeaders)
		}),
	}
	c.flags(cmd)
	out.flags(cmd, "json", "yaml")
	cmd.Flags().StringVar(&svc, "service", "", "only this service's events")
	noHeadersFlag(cmd, &noHeaders)
	return cmd
}

// printEvents prints events as given (newest first) in a table.
func printEvents(w io.Writer, events []Event, now time.Time, noHeaders bool) error {
	if len(events) == 0 {
		_, err := fmt.Fprintln(w, "No events.")
		return err
	}
	t := newTable(w, tableHeader(noHeaders, "LAST SEEN", "TYPE", "REASON", "SERVICE", "MESSAGE")...)
	for _, e := range events {
		t.row(eventAge(e, now), e.Type, e.Reason, e.Service, e.Message)
	}
	return t.flush()
}

// describeEvents is how many events describe service shows.
const describeEvents = 20

// events ends describe service, as kubectl's Events: the last
// describeEvents, oldest first.
func (d describer) events(ctx context.Context, service string, now time.Time) error {
	events, err := d.c.LastEvents(ctx, service, describeEvents)
	switch {
	case err != nil:
		return err
	case len(events) == 0:
		d.field("Events", "<none>")
		return nil
	}
	fmt.Fprintln(d.w, "Events:")
	t := newIndentedTable(d.w, "AGE", "TYPE", "REASON", "MESSAGE")
	for _, e := range slices.Backward(events) {
		t.row(eventAge(e, now), e.Type, e.Reason, e.Message)
	}
	return t.flush()
}
