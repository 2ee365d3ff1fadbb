-- +goose Up
-- What each agent's router side (router-sync) last said of its router:
-- the document version it was given, the change sequence the router holds
-- (acknowledged with the report), why the router does not hold it (error:
-- unreachable, a restart due) and the bridges it refused or cannot serve
-- (failed: a JSON list of {type, name, reason}). An agent without a
-- router side has no row: its acknowledgements are all there is.
CREATE TABLE router_reports (
    agent_uuid     TEXT PRIMARY KEY REFERENCES agents (uuid) ON DELETE CASCADE,
    version        TEXT NOT NULL,
    applied_seq    BIGINT,
    error          TEXT NOT NULL,
    failed         TEXT NOT NULL,
    failed_count   INTEGER NOT NULL,
    tcp_listeners  INTEGER NOT NULL,
    tcp_connectors INTEGER NOT NULL,
    reported_at    TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE router_reports;
