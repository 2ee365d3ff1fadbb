-- +goose Up
-- requested_at dates the request a reconcile answers: the service's create
-- or last update, or its last reconcile request, whichever came last. The
-- time to ready counts from it (updated_at also moves with the status, so a
-- ready service's reconcile counted from when it became ready).
ALTER TABLE services ADD COLUMN requested_at TIMESTAMP NOT NULL DEFAULT '1970-01-01 00:00:00';
UPDATE services SET requested_at = updated_at;

-- +goose Down
ALTER TABLE services DROP COLUMN requested_at;
