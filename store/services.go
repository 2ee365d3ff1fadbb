package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"svcbridge/service"
)

// Service constraint names.
const (
	ServiceNameKey       = "services_name_key"
	ServiceBridgePortKey = "services_bridge_port_key"
)

// ErrNoBridgePort means every port of the range is taken.
var ErrNoBridgePort = fmt.Errorf("no bridge port available")

const serviceCols = `name, type, resource, target_port, service_port, k8s_type, kubernetes, default_bridge, bridge_port,
	service_endpoint, provisioning_status, provisioning_error, generation, observed_generation,
	reconcile_request, observed_reconcile_request, created_at, updated_at, requested_at, connector_site, hub_site, backend_agent, bridge_agent, on_default_router`

// services runs a query of serviceCols, sorted by name, and reads the
// services' tags. size is about how many rows come: the list is allocated
// once.
func (t *Tx) services(ctx context.Context, size int, query string, args ...any) ([]service.Service, error) {
	out, err := t.scanServices(ctx, size, query, args...)
	if err != nil {
		return nil, err
	}
	return out, t.readTags(ctx, out)
}

// scanServices runs a query returning serviceCols, without the tags. The
// rows are scanned by hand, straight into the services, not by sqlx's
// reflection: a list of 10,000 services is mostly this.
func (t *Tx) scanServices(ctx context.Context, size int, query string, args ...any) ([]service.Service, error) {
	return t.scanServicesTags(ctx, size, false, query, args...)
}

// scanServicesTags is scanServices; with tags, the query's last column is
// the service's tags (tagsOf).
func (t *Tx) scanServicesTags(ctx context.Context, size int, tags bool, query string, args ...any) ([]service.Service, error) {
	rows, err := t.tx.QueryContext(ctx, t.tx.Rebind(query), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := make([]service.Service, 0, size)
	var s service.Service  // one scanned into, then copied out
	var kubernetes *string // spec.kubernetes as JSON
	var tagList []byte     // the tags as JSON
	p := &s.Placement
	dest := []any{&s.Name, &s.Type, &s.Resource, &s.TargetPort, &s.ServicePort, &s.K8sType, &kubernetes,
		&s.DefaultBridge, &s.BridgePort, &s.ServiceEndpoint, &s.ProvisioningStatus, &s.ProvisioningError,
		&s.Generation, &s.ObservedGeneration, &s.ReconcileRequest, &s.ObservedReconcileRequest, &s.CreatedAt, &s.UpdatedAt, &s.RequestedAt,
		&p.ConnectorSite, &p.HubSite, &p.BackendAgent, &p.BridgeAgent, &p.OnDefaultRouter}
	if tags {
		dest = append(dest, &tagList)
	}
	for rows.Next() {
		s, kubernetes = service.Service{}, nil
		if err := rows.Scan(dest...); err != nil {
			return nil, mapErr(err)
		}
		if kubernetes != nil {
			if err := json.Unmarshal([]byte(*kubernetes), &s.Kubernetes); err != nil {
				return nil, fmt.Errorf("service %s: stored kubernetes options: %w", s.Name, err)
			}
		}
		if tags {
			if err := json.Unmarshal(tagList, &s.Tags); err != nil {
				return nil, fmt.Errorf("service %s: its tags: %w", s.Name, err)
			}
		}
		s.CreatedAt, s.UpdatedAt, s.RequestedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC(), s.RequestedAt.UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// kubernetesJSON is the kubernetes column's value: the block as JSON, or
// NULL when absent.
func kubernetesJSON(k *service.Kubernetes) (*string, error) {
	if k == nil {
		return nil, nil
	}
	b, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// ListServices returns every service sorted by name.
func (t *Tx) ListServices(ctx context.Context) ([]service.Service, error) {
	return t.ServicesAfter(ctx, "", 0)
}

// GetService returns one service, read with its tags in one statement.
func (t *Tx) GetService(ctx context.Context, name string) (service.Service, error) {
	svcs, err := t.scanServicesTags(ctx, 1, true, t.servicesWithTags()+` WHERE name = ?`, name)
	if err == nil && len(svcs) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return service.Service{}, err
	}
	return svcs[0], nil
}

// servicesWithTags selects serviceCols and each service's tags (tagsOf),
// for scanServicesTags; a WHERE clause follows.
func (t *Tx) servicesWithTags() string {
	return `SELECT ` + serviceCols + `, ` + t.tagsOf("service_tags", "service_name", "services.name") + ` FROM services`
}

// ServicesToPlace reads the named services that exist, sorted by name,
// without their tags, which placement does not read: a change of one
// agent may concern thousands of services.
func (t *Tx) ServicesToPlace(ctx context.Context, names []string) ([]service.Service, error) {
	out, err := t.servicesNamed(ctx, names, false)
	slices.SortFunc(out, func(a, b service.Service) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// servicesNamed reads the named services that exist, in no order, with
// their tags or without: 500 a statement, however many are named.
func (t *Tx) servicesNamed(ctx context.Context, names []string, tags bool) ([]service.Service, error) {
	query := `SELECT ` + serviceCols + ` FROM services`
	if tags {
		query = t.servicesWithTags()
	}
	out := make([]service.Service, 0, len(names))
	for chunk := range slices.Chunk(names, 500) {
		q, args, err := t.in(query+` WHERE name IN (?)`, chunk)
		if err != nil {
			return nil, err
		}
		part, err := t.scanServicesTags(ctx, len(chunk), tags, q, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// readTags reads the tags of svcs, which hold every service from the
// first to the last by name (byte order): one range of the tags' index,
// however many they are.
func (t *Tx) readTags(ctx context.Context, svcs []service.Service) error {
	if len(svcs) == 0 {
		return nil
	}
	idx := make(map[string]int, len(svcs))
	for i := range svcs {
		svcs[i].Tags = []string{}
		idx[svcs[i].Name] = i
	}
	// Scanned by hand, as the services are: sqlx's reflection was a fifth
	// of a whole list's reading.
	rows, err := t.tx.QueryContext(ctx, t.tx.Rebind(t.tagsOfRange()), svcs[0].Name, svcs[len(svcs)-1].Name)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var svc, tag string
	for rows.Next() {
		if err := rows.Scan(&svc, &tag); err != nil {
			return mapErr(err)
		}
		if i, ok := idx[svc]; ok {
			svcs[i].Tags = append(svcs[i].Tags, tag)
		}
	}
	return mapErr(rows.Err())
}

// tagsOf selects the tags (of table, a service's or an agent's) whose
// owner, the column key, is the column col, in their order, as a JSON
// array: a row and its tags in one statement.
func (t *Tx) tagsOf(table, key, col string) string { return t.listOf(table, key, col, "tag") }

// listOf is tagsOf for a list whose values are the column value.
func (t *Tx) listOf(table, key, col, value string) string {
	from := ` FROM ` + table + ` WHERE ` + key + ` = ` + col
	if t.dialect == Postgres {
		return `COALESCE((SELECT json_agg(` + value + ` ORDER BY position)` + from + `), '[]')`
	}
	return `(SELECT json_group_array(` + value + ` ORDER BY position)` + from + `)`
}

// tagsOfRange is readTags's query (arguments the first and last name).
func (t *Tx) tagsOfRange() string {
	name := t.binary("service_name")
	return `SELECT service_name, tag FROM service_tags WHERE ` + name + ` >= ? AND ` + name + ` <= ?
		ORDER BY ` + name + `, position`
}

// PortRange is an inclusive range of bridge ports.
type PortRange struct{ First, Last int }

// Contains reports whether port is in the range.
func (r PortRange) Contains(port int) bool { return r.First <= port && port <= r.Last }

// ErrBridgePortOutOfRange means a requested bridge port is outside the
// range; a *BridgePortTakenError that another service holds it.
var ErrBridgePortOutOfRange = fmt.Errorf("requested bridge port outside the range")

// BridgePortTakenError is a requested bridge port that Service holds.
type BridgePortTakenError struct {
	Port    int
	Service string
}

func (e *BridgePortTakenError) Error() string {
	return fmt.Sprintf("bridge port %d is taken by service %s", e.Port, e.Service)
}

// Advisory lock keys of the bridge-port allocation (one-key form).
const (
	// floorLock guards the floor: a create raises it only when no other
	// transaction holds it, a delete lowers it waiting for it.
	floorLock = 7366725
	// portLockBase+port claims a port until its transaction ends.
	portLockBase = floorLock << 32
)

// AllocateBridgePort returns the first free port of ports that no
// transaction in flight has claimed. The unique index on bridge_port is
// what makes ports unique. On PostgreSQL creates do not queue behind each
// other: each claims its port with an advisory lock (one in flight skips to
// the next port), so their transactions run and commit side by side.
// The search starts at the stored floor (every port below it is taken), so
// it reads the services above it only. Call it in the transaction that
// inserts the service, with InsertService: a port a create committed
// between the search and the claim makes the transaction run again.
func (t *Tx) AllocateBridgePort(ctx context.Context, ports PortRange) (int, error) {
	from, raise, stale, err := t.bridgePortFloor(ctx, ports)
	if err != nil {
		return 0, err
	}
	floor := from
	// The claim is tried on the first free port only (LIMIT before it).
	// SQLite runs one writer at a time: nothing is in flight to claim from.
	claim, lockBase := "1 = 1", []any{}
	if t.dialect == Postgres {
		claim, lockBase = "pg_try_advisory_xact_lock(CAST(? AS BIGINT) + p)", []any{portLockBase}
	}
	query := `SELECT p, ` + claim + ` AS claimed FROM (` + firstFreePort + `) f`
	for {
		var free []struct {
			Port    int  `db:"p"`
			Claimed bool `db:"claimed"`
		}
		if err := t.sel(ctx, &free, query, append(lockBase, firstFreePortArgs(from, ports.Last)...)...); err != nil {
			return 0, err
		}
		first := ports.Last + 1 // no free port: the floor passes the range's end
		if len(free) > 0 {
			first = free[0].Port
		}
		// The first search found the first free port, claimed or not.
		if raise && (stale || first-floor >= floorLag) {
			if err := t.raiseBridgePortFloor(ctx, ports, first); err != nil {
				return 0, err
			}
		}
		raise = false
		if len(free) == 0 {
			return 0, ErrNoBridgePort
		}
		if free[0].Claimed {
			// On PostgreSQL the search read the services before the
			// claim: a create that held the port may have committed it
			// since. Rare, so not read again: the insert finds it, and
			// the transaction runs again (InsertService).
			t.allocated = first
			return first, nil
		}
		from = first + 1
	}
}

// floorLag is how far the first free port may run ahead of the stored
// floor before a create raises the floor: the search reads the services
// between the two (at most that many index entries), and most creates
// write no floor.
const floorLag = 32

// ClaimBridgePort takes port, which a client asked for, for the service the
// transaction inserts: a port of the range that no service holds. On
// PostgreSQL it holds the port's claim until the transaction ends, waiting
// for a transaction in flight that holds it (an allocation, or another
// claim) to end first, then reads whether it committed the port:
// allocations skip a claimed port, so neither hands it out twice. The
// unique index stays what makes ports unique.
func (t *Tx) ClaimBridgePort(ctx context.Context, ports PortRange, port int) error {
	if !ports.Contains(port) {
		return ErrBridgePortOutOfRange
	}
	if t.dialect == Postgres {
		if _, err := t.exec(ctx, `SELECT pg_advisory_xact_lock(CAST(? AS BIGINT) + ?)`, portLockBase, port); err != nil {
			return err
		}
	}
	var holders []string
	if err := t.sel(ctx, &holders, `SELECT name FROM services WHERE bridge_port = ?`, port); err != nil {
		return err
	}
	if len(holders) > 0 {
		return &BridgePortTakenError{Port: port, Service: holders[0]}
	}
	return nil
}

// firstFreePort finds the first port from a floor up to the range's last
// that no committed service holds (args: firstFreePortArgs), ordered and
// limited before any claim on it is tried.
const firstFreePort = `SELECT p FROM (
		SELECT CAST(? AS INTEGER) AS p WHERE ? <= ? AND NOT EXISTS (SELECT 1 FROM services WHERE bridge_port = ?)
		UNION ALL
		SELECT s.bridge_port + 1 FROM services s
		WHERE s.bridge_port >= ? AND s.bridge_port < ?
		  AND NOT EXISTS (SELECT 1 FROM services n WHERE n.bridge_port = s.bridge_port + 1)
	) free ORDER BY p LIMIT 1`

func firstFreePortArgs(from, last int) []any {
	return []any{from, from, last, from, from, last}
}

// bridgePortFloor returns where the search for a free port starts, and
// whether this transaction may raise the floor (raise: on PostgreSQL the
// one that takes the floor's lock without waiting, while others search
// from the floor as it is) and must (stale: no floor of this range is
// stored). The search runs after the floor's lock is held, so a delete
// that lowered the floor before is seen, and one that lowers it after
// comes later.
func (t *Tx) bridgePortFloor(ctx context.Context, ports PortRange) (from int, raise, stale bool, err error) {
	mine := "1"
	args := []any{}
	if t.dialect == Postgres {
		mine, args = "pg_try_advisory_xact_lock(?)", []any{floorLock}
	}
	var floors []struct {
		Mine  bool `db:"mine"`
		First *int `db:"first_port"`
		Floor *int `db:"floor"`
	}
	if err := t.sel(ctx, &floors, `SELECT m.mine, f.first_port, f.floor FROM (SELECT `+mine+` AS mine) m
		LEFT JOIN bridge_port_floor f ON f.id = 1`, args...); err != nil {
		return 0, false, false, err
	}
	from, stale = ports.First, true
	if f := floors[0]; f.First != nil && *f.First == ports.First { // a floor of another range says nothing of this one
		from, stale = max(from, *f.Floor), false
	}
	return from, floors[0].Mine, stale, nil
}

// raiseBridgePortFloor stores first, the first free port as a search
// from the floor found it under the floor's lock, as the floor.
func (t *Tx) raiseBridgePortFloor(ctx context.Context, ports PortRange, first int) error {
	_, err := t.exec(ctx, `INSERT INTO bridge_port_floor (id, first_port, floor) VALUES (1, ?, ?)
		ON CONFLICT (id) DO UPDATE SET first_port = excluded.first_port, floor = excluded.floor`, ports.First, first)
	return err
}

// InsertService stores a new service as pending, with its tags, and sets
// s to what was stored (timestamps as the database rounds them, tags a
// list), as GetService would read it: a create reads nothing back.
func (t *Tx) InsertService(ctx context.Context, s *service.Service) error {
	t.touch(changeService, s.Name) // for the lists' watches
	s.CreatedAt = now()
	s.UpdatedAt, s.RequestedAt = s.CreatedAt, s.CreatedAt
	s.ProvisioningStatus, s.ProvisioningError = service.StatusPending, nil
	s.Generation, s.ObservedGeneration, s.ReconcileRequest, s.ObservedReconcileRequest = 1, 0, 0, 0
	k, err := kubernetesJSON(s.Kubernetes)
	if err != nil {
		return err
	}
	p := s.Placement
	stored, err := t.scanServices(ctx, 1, `INSERT INTO services (`+serviceCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING `+serviceCols,
		s.Name, s.Type, s.Resource, s.TargetPort, s.ServicePort, s.K8sType, k, s.DefaultBridge, s.BridgePort,
		s.ServiceEndpoint, s.ProvisioningStatus, s.ProvisioningError, s.Generation, s.ObservedGeneration,
		s.ReconcileRequest, s.ObservedReconcileRequest, s.CreatedAt, s.UpdatedAt, s.RequestedAt, p.ConnectorSite, p.HubSite, p.BackendAgent, p.BridgeAgent, p.OnDefaultRouter)
	if IsConflict(err, ServiceBridgePortKey) && s.BridgePort == t.allocated {
		return fmt.Errorf("%w: %w", errPortRaced, err)
	}
	if err != nil {
		return err
	}
	// A new name has no tags: a deleted service's went with its row.
	if err := t.insertServiceTags(ctx, s.Name, s.Tags); err != nil {
		return err
	}
	tags := append([]string{}, s.Tags...)
	*s = stored[0]
	s.Tags = tags
	return nil
}

func (t *Tx) setServiceTags(ctx context.Context, name string, tags []string) error {
	if _, err := t.exec(ctx, `DELETE FROM service_tags WHERE service_name = ?`, name); err != nil {
		return err
	}
	return t.insertServiceTags(ctx, name, tags)
}

func (t *Tx) insertServiceTags(ctx context.Context, name string, tags []string) error {
	for i, tag := range tags {
		if _, err := t.exec(ctx, `INSERT INTO service_tags (service_name, position, tag) VALUES (?, ?, ?)`, name, i, tag); err != nil {
			return err
		}
	}
	return nil
}

// UpdateService writes the spec, placement and endpoint of s, read in this
// transaction, bumps its generation and sets it pending. bridgePort never
// changes.
func (t *Tx) UpdateService(ctx context.Context, s *service.Service) error {
	t.touch(changeService, s.Name)
	s.UpdatedAt = now()
	s.RequestedAt = s.UpdatedAt
	k, err := kubernetesJSON(s.Kubernetes)
	if err != nil {
		return err
	}
	p := s.Placement
	err = t.updateRead(ctx, `UPDATE services SET resource = ?, target_port = ?, service_port = ?, k8s_type = ?, kubernetes = ?,
			service_endpoint = ?, provisioning_status = ?, provisioning_error = NULL, generation = generation + 1, updated_at = ?, requested_at = ?,
			connector_site = ?, hub_site = ?, backend_agent = ?, bridge_agent = ?, on_default_router = ?
		WHERE name = ?`,
		s.Resource, s.TargetPort, s.ServicePort, s.K8sType, k, s.ServiceEndpoint, service.StatusPending, s.UpdatedAt, s.RequestedAt,
		p.ConnectorSite, p.HubSite, p.BackendAgent, p.BridgeAgent, p.OnDefaultRouter, s.Name)
	if err != nil {
		return err
	}
	return t.setServiceTags(ctx, s.Name, s.Tags)
}

// SetServicePlacement stores where a service's objects go now, as a
// reconcile found it after the inventory changed, unless the service moved
// past generation since (that generation's reconcile places it again).
func (t *Tx) SetServicePlacement(ctx context.Context, name string, generation int64, p service.Placement) error {
	t.touch(changeService, name)
	_, err := t.exec(ctx, `UPDATE services SET connector_site = ?, hub_site = ?, backend_agent = ?, bridge_agent = ?, on_default_router = ?
		WHERE name = ? AND generation = ?`,
		p.ConnectorSite, p.HubSite, p.BackendAgent, p.BridgeAgent, p.OnDefaultRouter, name, generation)
	return err
}

// DeleteService removes the row and records the deletion until the
// service's objects are gone: its router entries stay recorded until a
// reconcile removes them from the routers, and with inCluster its
// Kubernetes objects are recorded as left to remove (ClearDeletion).
func (t *Tx) DeleteService(ctx context.Context, name string, inCluster bool) error {
	t.touch(changeService, name)
	var ports []int
	if err := t.sel(ctx, &ports, `DELETE FROM services WHERE name = ? RETURNING bridge_port`, name); err != nil {
		return err
	}
	if len(ports) == 0 {
		return ErrNotFound
	}
	// The freed port is the first free one again if it is below the floor,
	// which it lowers under the floor's lock: last, as every delete and the
	// create raising the floor wait for that lock.
	t.last = append(t.last, func(ctx context.Context) error {
		if t.dialect == Postgres {
			if _, err := t.exec(ctx, `SELECT pg_advisory_xact_lock(?)`, floorLock); err != nil {
				return err
			}
		}
		_, err := t.exec(ctx, `UPDATE bridge_port_floor SET floor = ? WHERE id = 1 AND floor > ?`, ports[0], ports[0])
		return err
	})
	_, err := t.exec(ctx, `INSERT INTO service_deletions (service_name, deleted_at, cluster_objects) VALUES (?, ?, ?)
		ON CONFLICT (service_name) DO UPDATE SET deleted_at = excluded.deleted_at, cluster_objects = excluded.cluster_objects`,
		name, now(), inCluster)
	return err
}

// ClearDeletion records that a deleted service's Kubernetes objects are
// removed; a service of that name created since keeps nothing to clear.
func (t *Tx) ClearDeletion(ctx context.Context, name string) error {
	t.touch(changeService, name)
	_, err := t.exec(ctx, `UPDATE service_deletions SET cluster_objects = FALSE WHERE service_name = ?`, name)
	return err
}

// PruneDeletions forgets the deletions whose objects are all gone.
func (t *Tx) PruneDeletions(ctx context.Context) error {
	_, err := t.exec(ctx, `DELETE FROM service_deletions WHERE NOT cluster_objects
		AND NOT EXISTS (SELECT 1 FROM router_entries e WHERE e.service_name = service_deletions.service_name)`)
	return err
}

// RequestReconcile counts a reconcile asked for through the API and
// returns its number: the reconcile that answers it is the first to begin
// after this commits, and records the number it read (SetServiceStatus).
// It does not touch updated_at, which dates the spec and the status; the
// time to ready counts from requested_at.
func (t *Tx) RequestReconcile(ctx context.Context, name string) (int64, error) {
	t.touch(changeService, name)
	var n int64
	err := t.get(ctx, &n, `UPDATE services SET `+requestReconcile+` WHERE name = ?
		RETURNING reconcile_request`, now(), name)
	return n, err
}

// RequestReconcilesFor counts a reconcile of each named service, asked for by
// a change of an agent or microservice it depends on, in the transaction
// of that change: until a reconcile that began after it finishes, the
// service is unsettled, so the worker's resync signals it again when the
// API's signal is lost, and the drift check does not mistake its pass
// under way for a repair. cause, each service's ReconcileRequested event,
// is the change as its caller knows it ("reconcile requested by a change
// of agent fog-a"); "" records none. The events of 500 services cost a
// few statements, so that a change of the default router, which every
// service may follow, stays a short transaction.
func (t *Tx) RequestReconcilesFor(ctx context.Context, names []string, cause string) error {
	t.touch(changeService, names...)
	at := now()
	for chunk := range slices.Chunk(names, 500) {
		q, args, err := t.in(`UPDATE services SET `+requestReconcile+` WHERE name IN (?)
			RETURNING name AS service_name, generation`, at, chunk)
		if err != nil {
			return err
		}
		var requested []Event
		if err := t.sel(ctx, &requested, q, args...); err != nil {
			return err
		}
		if cause == "" || len(requested) == 0 {
			continue
		}
		for i := range requested {
			requested[i].Type, requested[i].Reason, requested[i].Message = EventNormal, ReasonReconcileRequested, cause
		}
		if err := t.recordEvents(ctx, requested); err != nil {
			return err
		}
	}
	return nil
}

// requestReconcile counts one more reconcile request, made at its one
// argument.
const requestReconcile = `reconcile_request = reconcile_request + 1, requested_at = ?`

// PassResult is what a reconcile pass of a service records: the outcome
// of generation Generation, which began when the service's reconcile
// request count was Request.
type PassResult struct {
	Generation, Request int64
	Status              string
	Reason              *string // why it failed; nil when it did not
	Endpoint            *string // nil clears it
	KeepEndpoint        bool    // the endpoint stays as it is
	// Fanout: the pass has yet to queue its fan-out (FanoutQueued ends
	// it); until then the service's reconcile is under way.
	Fanout bool
}

// SetServiceStatus records a pass's result, in one statement. It changes
// nothing when the spec moved on meanwhile: the next reconcile reports
// instead. It reports whether the row was updated.
func (t *Tx) SetServiceStatus(ctx context.Context, name string, r PassResult) (bool, error) {
	t.touch(changeService, name)
	n, err := t.exec(ctx, `UPDATE services SET provisioning_status = ?, provisioning_error = ?,
			service_endpoint = CASE WHEN ? THEN service_endpoint ELSE ? END, observed_generation = ?,
			observed_reconcile_request = ?, updated_at = ?, fanout_pending = (fanout_pending OR ?)
		WHERE name = ? AND generation = ?`,
		r.Status, r.Reason, r.KeepEndpoint, r.Endpoint, r.Generation, r.Request, now(), r.Fanout, name, r.Generation)
	return n > 0, err
}

// pendingNames selects services whose latest generation or reconcile
// request no reconcile has finished, or whose last pass recorded its
// outcome but has yet to queue its fan-out.
const pendingNames = `SELECT name FROM services
	WHERE (generation <> observed_generation OR reconcile_request <> observed_reconcile_request OR fanout_pending)`

// FanoutQueued records that a pass of the service queued its fan-out.
func (t *Tx) FanoutQueued(ctx context.Context, name string) error {
	t.touch(changeService, name)
	_, err := t.exec(ctx, `UPDATE services SET fanout_pending = FALSE WHERE name = ? AND fanout_pending`, name)
	return err
}

// deletingNames selects deleted services (without a row) that still have
// router entries or Kubernetes objects: those a reconcile has not removed
// yet. It reads the deletions, never every router entry.
const deletingNames = `SELECT d.name FROM (SELECT service_name AS name, cluster_objects, deleted_at FROM service_deletions) d
	WHERE NOT EXISTS (SELECT 1 FROM services s WHERE s.name = d.name)
	  AND (d.cluster_objects OR EXISTS (SELECT 1 FROM router_entries e WHERE e.service_name = d.name))`

// UnsettledServices names services whose latest generation or reconcile
// request no reconcile has finished, and deleted services whose objects
// remain: the work a lost signal would otherwise leave undone. Only those
// changed, requested or deleted before olderThan: the newer ones' signals
// may be on their way, and a burst of deletes that their workflows work
// through is not signalled again.
func (t *Tx) UnsettledServices(ctx context.Context, olderThan time.Time) ([]string, error) {
	var names []string
	err := t.sel(ctx, &names, pendingNames+` AND updated_at < ? AND requested_at < ?
		UNION `+deletingNames+` AND d.deleted_at < ? ORDER BY 1`, olderThan, olderThan, olderThan)
	return names, err
}

// UnsettledAmong names those of names that a reconcile has yet to finish:
// a generation or request no reconcile finished, a fan-out not queued
// yet, or deleted with objects left.
func (t *Tx) UnsettledAmong(ctx context.Context, names []string) ([]string, error) {
	return selIn[string](ctx, t, pendingNames+` AND name IN (?)
			UNION SELECT name FROM (`+deletingNames+`) gone WHERE name IN (?)`, names)
}

// FailedServices names the services whose last reconcile failed.
func (t *Tx) FailedServices(ctx context.Context) ([]string, error) {
	var names []string
	err := t.sel(ctx, &names, `SELECT name FROM services WHERE provisioning_status = ? ORDER BY 1`, service.StatusFailed)
	return names, err
}

// DeletingServicesAfter names the deleted services whose router entries
// remain, by name (byte order): up to limit (0: all) named after after.
func (t *Tx) DeletingServicesAfter(ctx context.Context, after string, limit int) ([]string, error) {
	page, args := t.namedAfter("d.name", after, limit)
	var names []string
	err := t.sel(ctx, &names, deletingNames+` AND `+page, args...)
	return names, err
}

// ServiceDeleting reports whether name is a deleted service whose router
// entries remain.
func (t *Tx) ServiceDeleting(ctx context.Context, name string) (bool, error) {
	var names []string
	err := t.sel(ctx, &names, deletingNames+` AND d.name = ?`, name)
	return len(names) > 0, err
}
