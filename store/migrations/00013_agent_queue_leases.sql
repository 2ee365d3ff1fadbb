-- +goose Up
-- The agent queue's workflow asks when the earliest lease ends; only
-- leased marks are indexed, a window's worth, not the whole queue.
CREATE INDEX agent_queue_leases ON agent_queue (claimed_until) WHERE claimed_until IS NOT NULL;

-- +goose Down
DROP INDEX agent_queue_leases;
