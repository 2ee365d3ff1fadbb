package activities

import (
	"context"

	"svcbridge/store"
)

// AgentQueueOutlook says how many queued agents a batch could claim now
// (at most limit) and when the earliest lease held ends: the agent queue's
// workflow starts batches for the first and waits for the second.
func (a *Activities) AgentQueueOutlook(ctx context.Context, limit int) (store.QueueOutlook, error) {
	return a.Store.QueueOutlook(ctx, limit)
}
