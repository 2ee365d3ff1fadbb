-- +goose Up
-- Every deleted service has a row here until its objects are gone, on
-- either control plane, so that the deleting services are found from these
-- rows and not by reading every router entry. cluster_objects: its
-- Kubernetes objects are still to remove (the rows there before).
ALTER TABLE service_deletions ADD COLUMN cluster_objects BOOLEAN NOT NULL DEFAULT TRUE;
INSERT INTO service_deletions (service_name, deleted_at, cluster_objects)
    SELECT DISTINCT e.service_name, CURRENT_TIMESTAMP, FALSE FROM router_entries e
    WHERE NOT EXISTS (SELECT 1 FROM services s WHERE s.name = e.service_name)
      AND NOT EXISTS (SELECT 1 FROM service_deletions d WHERE d.service_name = e.service_name);

-- +goose Down
DELETE FROM service_deletions WHERE NOT cluster_objects;
ALTER TABLE service_deletions DROP COLUMN cluster_objects;
