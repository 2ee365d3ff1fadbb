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
// the transaction ends; ErrNotFound when one is gone.
func (t *Tx) HoldAgents(ctx context.Context, uuids ...string) error {
	return t.hold(ctx, "agents", uuids)
}

// HoldMicroservice keeps a microservice from being deleted until the
// transaction ends; ErrNotFound when it is gone.
func (t *Tx) HoldMicroservice(ctx context.Context, uuid string) error {
	return t.hold(ctx, "microservices", []string{uuid})
}

func (t *Tx) hold(ctx context.Context, table string, uuids []string) error {
	want := distinctNonEmpty(uuids)
	if len(want) == 0 {
		return nil
	}
	lock := ""
	if t.dialect == Postgres {
		lock = " FOR KEY SHARE"
	}
	query, args, err := t.in(`SELECT uuid FROM `+table+` WHERE uuid IN (?)`+lock, want)
	if err != nil {
		return err
	}
	var held []string
	if err := t.sel(ctx, &held, query, args...); err != nil {
		return err
	}
	if len(held) < len(want) {
		return ErrNotFound
	}
	return nil
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
