-- +goose Up
-- A deleted service whose Kubernetes objects (its Service, its pairs in
-- the hub ConfigMap) a reconcile has not removed yet: router_entries
-- record what agents' routers hold, this what the cluster holds.
CREATE TABLE service_deletions (
    service_name TEXT PRIMARY KEY,
    deleted_at   TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE service_deletions;
