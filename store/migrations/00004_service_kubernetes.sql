-- +goose Up
-- spec.kubernetes: the options of a service's Kubernetes Service, as JSON
-- text (NULL when absent). Only svcbridge reads it, always whole.
ALTER TABLE services ADD COLUMN kubernetes TEXT;

-- +goose Down
ALTER TABLE services DROP COLUMN kubernetes;
