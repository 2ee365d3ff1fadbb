-- +goose Up
-- reconcile_request counts the reconciles asked for through the API;
-- observed_reconcile_request is the count the last finished reconcile read
-- when it began. A client that asked waits for the second to reach its
-- number: a pass already under way when it asked does not count.
ALTER TABLE services ADD COLUMN reconcile_request BIGINT NOT NULL DEFAULT 0;
ALTER TABLE services ADD COLUMN observed_reconcile_request BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE services DROP COLUMN observed_reconcile_request;
ALTER TABLE services DROP COLUMN reconcile_request;
