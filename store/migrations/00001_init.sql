-- +goose Up
-- One schema for PostgreSQL and SQLite: TIMESTAMP (always written in UTC)
-- is the type both drivers read back as time.Time.
-- Constraint names are spelled <table>_<columns>_key so that PostgreSQL and
-- SQLite (which reports the columns) name a violation the same way.
CREATE TABLE agents (
    uuid           TEXT CONSTRAINT agents_uuid_key PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    host           TEXT NOT NULL DEFAULT '',
    router_mode    TEXT NOT NULL CHECK (router_mode IN ('edge', 'interior', 'none')),
    default_router BOOLEAN NOT NULL DEFAULT FALSE,
    -- SHA-256 of the agent's credential (hex); the credential itself is
    -- shown once, at create or rotation.
    token_hash     TEXT NOT NULL CONSTRAINT agents_token_hash_key UNIQUE,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
-- Exactly one hub: the database, not luck, keeps a second default router out.
CREATE UNIQUE INDEX agents_default_router_key ON agents (default_router) WHERE default_router;

CREATE TABLE agent_tags (
    agent_uuid TEXT NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    tag        TEXT NOT NULL,
    PRIMARY KEY (agent_uuid, position)
);
CREATE INDEX agent_tags_tag ON agent_tags (tag);

CREATE TABLE agent_upstreams (
    agent_uuid    TEXT NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    upstream_uuid TEXT NOT NULL REFERENCES agents (uuid),
    PRIMARY KEY (agent_uuid, position),
    UNIQUE (agent_uuid, upstream_uuid)
);
CREATE INDEX agent_upstreams_upstream ON agent_upstreams (upstream_uuid);

CREATE TABLE microservices (
    uuid              TEXT CONSTRAINT microservices_uuid_key PRIMARY KEY,
    application       TEXT NOT NULL,
    name              TEXT NOT NULL,
    agent_uuid        TEXT NOT NULL REFERENCES agents (uuid),
    host_network_mode BOOLEAN NOT NULL DEFAULT FALSE,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    UNIQUE (application, name)
);
CREATE INDEX microservices_agent ON microservices (agent_uuid);

-- The router microservice config of an agent with a router (routerMode edge
-- or interior). version counts writes.
CREATE TABLE router_configs (
    agent_uuid TEXT PRIMARY KEY REFERENCES agents (uuid) ON DELETE CASCADE,
    config     TEXT NOT NULL,
    version    BIGINT NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

-- ioFog change tracking, one row per agent: flags the agent pulls, and
-- last_updated (ms, strictly increasing per agent) that it acknowledges.
CREATE TABLE agent_changes (
    agent_uuid          TEXT PRIMARY KEY REFERENCES agents (uuid) ON DELETE CASCADE,
    microservice_config BOOLEAN NOT NULL DEFAULT FALSE,
    last_updated        BIGINT NOT NULL DEFAULT 0,
    acknowledged        BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE services (
    name                TEXT CONSTRAINT services_name_key PRIMARY KEY,
    type                TEXT NOT NULL,
    resource            TEXT NOT NULL,
    target_port         INTEGER NOT NULL,
    service_port        INTEGER,
    k8s_type            TEXT,
    default_bridge      TEXT NOT NULL,
    bridge_port         INTEGER NOT NULL,
    service_endpoint    TEXT,
    provisioning_status TEXT NOT NULL,
    provisioning_error  TEXT,
    generation          BIGINT NOT NULL DEFAULT 1,
    observed_generation BIGINT NOT NULL DEFAULT 0,
    created_at          TIMESTAMP NOT NULL,
    updated_at          TIMESTAMP NOT NULL,
    CONSTRAINT services_bridge_port_key UNIQUE (bridge_port)
);

CREATE TABLE service_tags (
    service_name TEXT NOT NULL REFERENCES services (name) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    tag          TEXT NOT NULL,
    PRIMARY KEY (service_name, position)
);
CREATE INDEX service_tags_tag ON service_tags (tag);

-- What svcbridge wrote into each router config: the applied state that a
-- reconcile diffs against, so nothing it placed is ever left stale. No
-- foreign key to services: entries outlive a deleted service until removed.
CREATE TABLE router_entries (
    agent_uuid   TEXT NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('listener', 'connector')),
    service_name TEXT NOT NULL,
    written_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (agent_uuid, kind, service_name)
);
CREATE INDEX router_entries_service ON router_entries (service_name);

-- +goose Down
DROP TABLE router_entries;
DROP TABLE service_tags;
DROP TABLE services;
DROP TABLE agent_changes;
DROP TABLE router_configs;
DROP TABLE microservices;
DROP TABLE agent_upstreams;
DROP TABLE agent_tags;
DROP TABLE agents;
