package store

import (
	"context"
	"strings"

	"svcbridge/inventory"
	"svcbridge/service"
)

// Microservice constraint names.
const (
	MicroserviceUUIDKey = "microservices_uuid_key"
	MicroserviceNameKey = "microservices_application_name_key"
)

const msCols = `uuid, application, name, agent_uuid, host_network_mode, created_at, updated_at`

// ListMicroservices returns every microservice by application and name.
func (t *Tx) ListMicroservices(ctx context.Context) ([]inventory.Microservice, error) {
	ms := []inventory.Microservice{}
	return ms, t.sel(ctx, &ms, `SELECT `+msCols+` FROM microservices ORDER BY `+t.binary("application")+`, `+t.binary("name"))
}

// GetMicroservice finds a microservice by uuid.
func (t *Tx) GetMicroservice(ctx context.Context, uuid string) (inventory.Microservice, error) {
	var m inventory.Microservice
	return m, t.get(ctx, &m, `SELECT `+msCols+` FROM microservices WHERE uuid = ?`, uuid)
}

// FindMicroservice resolves a service resource: "<application>/<name>" or a uuid.
func (t *Tx) FindMicroservice(ctx context.Context, resource string) (inventory.Microservice, error) {
	var m inventory.Microservice
	return m, t.microserviceByRef(ctx, &m, msCols, resource)
}

// MicroserviceUUID turns a service resource, "<application>/<name>" or a
// uuid, into the microservice's uuid.
func (t *Tx) MicroserviceUUID(ctx context.Context, resource string) (string, error) {
	var uuid string
	return uuid, t.microserviceByRef(ctx, &uuid, "uuid", resource)
}

// microserviceByRef reads cols of the microservice resource names into
// dest.
func (t *Tx) microserviceByRef(ctx context.Context, dest any, cols, resource string) error {
	if app, name, ok := strings.Cut(resource, "/"); ok {
		return t.get(ctx, dest, `SELECT `+cols+` FROM microservices WHERE application = ? AND name = ?`, app, name)
	}
	return t.get(ctx, dest, `SELECT `+cols+` FROM microservices WHERE uuid = ?`, resource)
}

// CreateMicroservice inserts m.
func (t *Tx) CreateMicroservice(ctx context.Context, m *inventory.Microservice) error {
	m.CreatedAt, m.UpdatedAt = now(), now()
	t.touch(changeListed, m.UUID)
	_, err := t.exec(ctx, `INSERT INTO microservices (`+msCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		m.UUID, m.Application, m.Name, m.AgentUUID, m.HostNetworkMode, m.CreatedAt, m.UpdatedAt)
	return err
}

// UpdateMicroservice writes every field of m, read in this transaction.
func (t *Tx) UpdateMicroservice(ctx context.Context, m *inventory.Microservice) error {
	m.UpdatedAt = now()
	t.touch(changeListed, m.UUID)
	return t.updateRead(ctx, `UPDATE microservices SET application = ?, name = ?, agent_uuid = ?, host_network_mode = ?, updated_at = ? WHERE uuid = ?`,
		m.Application, m.Name, m.AgentUUID, m.HostNetworkMode, m.UpdatedAt, m.UUID)
}

// ServicesOfMicroservice names the services whose backend is uuid.
func (t *Tx) ServicesOfMicroservice(ctx context.Context, uuid string) ([]string, error) {
	var names []string
	return names, t.sel(ctx, &names, `SELECT name FROM services WHERE type = ? AND resource = ? ORDER BY name`, service.TypeMicroservice, uuid)
}

// DeleteMicroservice removes a microservice.
func (t *Tx) DeleteMicroservice(ctx context.Context, uuid string) error {
	t.touch(changeListed, uuid)
	n, err := t.exec(ctx, `DELETE FROM microservices WHERE uuid = ?`, uuid)
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}
