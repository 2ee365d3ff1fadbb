-- +goose Up
-- A service's placement (service.Place) is stored with it: the routers'
-- queries look it up instead of deciding it. connector_site and hub_site
-- are the agents holding its connector and hub listener ('' for none);
-- backend_agent, bridge_agent and on_default_router are what an agent
-- change must re-place it for.
ALTER TABLE services ADD COLUMN connector_site TEXT NOT NULL DEFAULT '';
ALTER TABLE services ADD COLUMN hub_site TEXT NOT NULL DEFAULT '';
ALTER TABLE services ADD COLUMN backend_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE services ADD COLUMN bridge_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE services ADD COLUMN on_default_router BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX services_connector_site ON services (connector_site);
CREATE INDEX services_hub_site ON services (hub_site);

-- Existing rows get the remote control plane's placement as the queries
-- decided it until now, so no router loses an object on upgrade, and
-- observed_generation 0 makes the resync reconcile each once, which
-- stores the placement as service.Place decides it on this control plane.
UPDATE services SET
    backend_agent = CASE type
        WHEN 'agent' THEN resource
        WHEN 'microservice' THEN COALESCE((SELECT m.agent_uuid FROM microservices m WHERE m.uuid = services.resource), '')
        ELSE '' END,
    bridge_agent = CASE WHEN default_bridge <> 'default-router' THEN default_bridge ELSE '' END,
    on_default_router = (default_bridge = 'default-router' OR type IN ('k8s', 'external'));
UPDATE services SET
    connector_site = CASE WHEN type IN ('k8s', 'external')
        THEN COALESCE((SELECT a.uuid FROM agents a WHERE a.default_router), '') ELSE backend_agent END,
    hub_site = CASE WHEN bridge_agent <> '' THEN bridge_agent
        ELSE COALESCE((SELECT a.uuid FROM agents a WHERE a.default_router), '') END,
    observed_generation = 0;

-- +goose Down
DROP INDEX services_hub_site;
DROP INDEX services_connector_site;
ALTER TABLE services DROP COLUMN on_default_router;
ALTER TABLE services DROP COLUMN bridge_agent;
ALTER TABLE services DROP COLUMN backend_agent;
ALTER TABLE services DROP COLUMN hub_site;
ALTER TABLE services DROP COLUMN connector_site;
