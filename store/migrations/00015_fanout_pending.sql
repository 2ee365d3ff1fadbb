-- +goose Up
-- A pass records its outcome before it queues the agents its tags reach
-- beyond its sites; until it has, the service's reconcile is under way
-- (the drift check's judgement of a repair reads it).
ALTER TABLE services ADD COLUMN fanout_pending BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE services DROP COLUMN fanout_pending;
