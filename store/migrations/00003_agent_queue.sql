-- +goose Up
-- Agents whose router must be reconciled. Marks of one agent coalesce
-- (seq moves on), so a burst of service changes costs each agent about one
-- rewrite; a reconcile clears only the mark it saw. claimed_until leases a
-- mark to one worker; an expired lease is claimed again.
CREATE TABLE agent_queue (
    agent_uuid    TEXT CONSTRAINT agent_queue_agent_uuid_key PRIMARY KEY,
    seq           BIGINT NOT NULL DEFAULT 1,
    claimed_until TIMESTAMP
);

-- +goose Down
DROP TABLE agent_queue;
