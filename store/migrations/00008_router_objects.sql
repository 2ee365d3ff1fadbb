-- +goose Up
-- The objects svcbridge holds on a router live in their entry's row, beside
-- the router's base document (router_configs.config: what anyone else wrote
-- there), so a change to one service writes one row however many the router
-- holds. NULL: an entry recorded before this migration, whose object is
-- still in the base document until the next reconcile of that router moves it.
ALTER TABLE router_entries ADD COLUMN object TEXT;

-- +goose Down
ALTER TABLE router_entries DROP COLUMN object;
