package temporalclient

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// PollerFresh is how recently a worker must have polled to count as
// polling: Temporal lists a poller for minutes after it left, and an idle
// worker re-polls about once a minute.
const PollerFresh = 2 * time.Minute

// Pollers reports how many workers poll the task queue for workflow tasks,
// from Temporal's description of the queue.
func (c Client) Pollers(ctx context.Context) (int, error) {
	desc, err := c.Temporal.DescribeTaskQueue(ctx, c.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return 0, err
	}
	var seen []time.Time
	for _, p := range desc.GetPollers() {
		seen = append(seen, p.GetLastAccessTime().AsTime())
	}
	return LivePollers(seen, time.Now()), nil
}

// LivePollers counts the pollers last seen within PollerFresh of now.
func LivePollers(lastAccess []time.Time, now time.Time) int {
	n := 0
	for _, t := range lastAccess {
		if now.Sub(t) <= PollerFresh {
			n++
		}
	}
	return n
}
