-- +goose Up
-- What happened to a service over time, as kubectl's Events: written in
-- the transaction that made the change, so an event is never recorded for
-- a change that rolled back (a dry run's included). seq numbers a
-- service's events; a repeat of its newest event (the same type, reason,
-- message and generation: a retry failing alike) counts up and moves
-- last_at instead of adding a row. RecordEvent keeps the last 50 per service.
-- No foreign key to services: a deleted service's events stay readable.
CREATE TABLE service_events (
    service_name TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    type         TEXT NOT NULL CHECK (type IN ('Normal', 'Warning')),
    reason       TEXT NOT NULL,
    message      TEXT NOT NULL,
    generation   BIGINT NOT NULL,
    count        BIGINT NOT NULL DEFAULT 1,
    first_at     TIMESTAMP NOT NULL,
    last_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (service_name, seq)
);
CREATE INDEX service_events_last_at ON service_events (last_at);

-- +goose Down
DROP TABLE service_events;
