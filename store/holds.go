package store

import "context"

// A write that makes a service refer to an agent or a microservice holds
// that row (Hold*), and a delete locks its row before it asks whether
// anything uses it (LockForDelete): on PostgreSQL the two wait for each
// other's commit (FOR KEY SHARE against FOR UPDATE), so a delete's "in
// use" check and a create that starts using the row cannot both pass, on
// any number of API replicas. An update of the row (an agent's tags, a
// microservice moved) takes neither lock's conflict. SQLite runs writers
// one at a time: there the holds are plain reads.

// HoldAgents keeps agents (uuids; "" is skipped) from being deleted until
// the transaction ends and returns their names (uuid -> name), which an
// answer about what holds them shows; ErrNotFound when one is gone.
func (t *Tx) HoldAgents(ctx context.Context, uuids ...string) (map[string]string, error) {
	return t.hold(ctx, "agents", uuids)
}

// HoldMicroservice keeps a microservice from being deleted until the
// transaction ends; ErrNotFound when it is gone.
func (t *Tx) HoldMicroservice(ctx context.Context, uuid string) error {
	_, err := t.hold(ctx, "microservices", []string{uuid})
	return err
}

// hold holds the rows of table whose uuids are given and returns their
// names by uuid.
func (t *Tx) hold(ctx context.Context, table string, uuids []string) (map[string]string, error) {
	want := distinctNonEmpty(uuids)
	if len(want) == 0 {
		return map[string]string{}, nil
	}
	held, err := t.namesOf(ctx, `SELECT uuid, name FROM `+table+` WHERE uuid IN (?)`+t.keyShare(), want)
	if err == nil && len(held) < len(want) {
		err = ErrNotFound
	}
	return held, err
}

// keyShare is the row lock clause of a hold: FOR KEY SHARE on PostgreSQL
// (SQLite's one writer at a time needs none).
func (t *Tx) keyShare() string {
	if t.dialect == Postgres {
		return " FOR KEY SHARE"
	}
	return ""
}

// LockForDelete locks the agent or microservice (table "agents" or
// "microservices") a delete is about to check and remove, waiting for the
// writes that hold it; ErrNotFound when it is gone meanwhile.
func (t *Tx) LockForDelete(ctx context.Context, table, uuid string) error {
	var got string
	return t.get(ctx, &got, `SELECT uuid FROM `+table+` WHERE uuid = ?`+t.forUpdate(table), uuid)
}

func distinctNonEmpty(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
