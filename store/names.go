package store

import (
	"context"
)

// AgentNames maps each of uuids that is an agent's uuid to the agent's
// name; the others are absent.
func (t *Tx) AgentNames(ctx context.Context, uuids []string) (map[string]string, error) {
	return t.namesOf(ctx, `SELECT uuid, name FROM agents WHERE uuid IN (?)`, uuids)
}

// MicroserviceNames maps each of uuids that is a microservice's uuid to
// its application/name, as services and the CLI name it; the others are
// absent.
func (t *Tx) MicroserviceNames(ctx context.Context, uuids []string) (map[string]string, error) {
	return t.namesOf(ctx, `SELECT uuid, application || '/' || name AS name FROM microservices WHERE uuid IN (?)`, uuids)
}

// namesOf runs query, which selects uuid and name of the rows whose uuid
// is in a list, over uuids in chunks.
func (t *Tx) namesOf(ctx context.Context, query string, uuids []string) (map[string]string, error) {
	rows, err := selIn[struct {
		UUID string `db:"uuid"`
		Name string `db:"name"`
	}](ctx, t, query, uuids)
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.UUID] = r.Name
	}
	return out, err
}
