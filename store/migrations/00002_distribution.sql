-- +goose Up
-- Distribution visibility. change_seq is the agent's agent_changes.last_updated
-- that the write of an entry set: the agent has applied the entry exactly when
-- it acknowledged a lastUpdated >= change_seq. acknowledged_at is when that
-- acknowledgement arrived (NULL until then); a rewrite of the entry resets it.
ALTER TABLE router_entries ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE router_entries ADD COLUMN acknowledged_at TIMESTAMP;
-- Entries written before this migration: the latest change of their agent is
-- the safe upper bound of the change that wrote them.
UPDATE router_entries SET change_seq = COALESCE(
    (SELECT c.last_updated FROM agent_changes c WHERE c.agent_uuid = router_entries.agent_uuid), 0);
UPDATE router_entries SET acknowledged_at = router_entries.written_at
    WHERE change_seq <= COALESCE(
        (SELECT c.acknowledged FROM agent_changes c WHERE c.agent_uuid = router_entries.agent_uuid), 0)
      AND change_seq > 0;

-- +goose Down
ALTER TABLE router_entries DROP COLUMN acknowledged_at;
ALTER TABLE router_entries DROP COLUMN change_seq;
