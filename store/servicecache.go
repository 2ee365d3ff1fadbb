package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"svcbridge/service"
)

// A list of 10,000 services spent most of its time reading rows that had
// not changed since the list before it (on SQLite, modernc's driver takes
// a lock twice for every column of every row). So every service row has a
// version that changes whenever the row is written (serviceVersion), and
// a process keeps the rows its lists read, by version: a list reads the
// names and versions of its page, takes the rows whose version the cache
// holds, and reads only the others, in the same snapshot. A service's tags
// are written with its row, so its version covers them too.
//
// On SQLite the counter that numbers the versions is also the table's
// version: every insert, update and delete of a row moves it. A whole list
// at the version a whole list was read at is that list again, read in one
// statement where reading 10,000 names and versions took most of its time.
//
// Only read transactions (Store.Read) use the cache: they see committed
// rows only, so every version cached was committed. (An SQLite write that
// rolled back gives its version to the next write, whose row may differ.)

// serviceCacheLife bounds how long the cache keeps anything: PostgreSQL's
// transaction ids, the versions there, come round again after 2^32
// transactions, which no hour holds; and services deleted since only pages
// were read (a whole list drops them) go with the rest.
const serviceCacheLife = time.Hour

// serviceVersion is the expression of a services row's version: the id of
// the transaction that wrote the row on PostgreSQL (xmin: free, and unique
// to every write until ids wrap), the counter migration 17's triggers set
// on SQLite.
func (t *Tx) serviceVersion() string {
	if t.dialect == Postgres {
		return `xmin::text::bigint`
	}
	return `row_version`
}

// serviceCache holds services as lists read them, by name, with the
// version they were read at. Their tags and Kubernetes blocks are shared
// with every list that takes them: read-only.
type serviceCache struct {
	mu    sync.Mutex
	rows  map[string]service.Service // at their Version
	since time.Time                  // when rows was started
	// all is every service, as a whole list read them at the table's
	// version allAt (SQLite only); nil when no whole list was kept.
	all   []service.Service
	allAt int64
}

// versioned is a service's name and its row's version in one snapshot.
type versioned struct {
	name    string
	version int64
}

func newServiceCache() *serviceCache {
	return &serviceCache{rows: map[string]service.Service{}, since: time.Now()}
}

// take sets out[i] to the service page[i] names wherever the cache holds
// it at page[i]'s version, and returns the indexes of the others.
func (c *serviceCache) take(page []versioned, out []service.Service) (missing []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	for i, p := range page {
		if hit, ok := c.rows[p.name]; ok && hit.Version == p.version {
			out[i] = hit
		} else {
			missing = append(missing, i)
		}
	}
	return missing
}

// expire starts the cache again once it is serviceCacheLife old.
func (c *serviceCache) expire() {
	if time.Since(c.since) > serviceCacheLife {
		c.rows, c.since, c.all = map[string]service.Service{}, time.Now(), nil
	}
}

// takeAll returns every service, as the whole list kept at the table's
// version at read them, or false when none was kept at that version. The
// list is shared with every caller: read-only, as what it holds is.
func (c *serviceCache) takeAll(at int64) ([]service.Service, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	if c.all == nil || c.allAt != at {
		return nil, false
	}
	return c.all, true
}

// putAll keeps svcs, read-only from now on, as the whole list at the
// table's version at.
func (c *serviceCache) putAll(at int64, svcs []service.Service) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all, c.allAt = slices.Clip(svcs), at
}

// put keeps the services of page at the indexes read, setting their
// Version to page's. whole says page is every service there is: the cache
// then holds those only, so deleted services do not stay.
func (c *serviceCache) put(page []versioned, svcs []service.Service, read []int, whole bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range read {
		svcs[i].Version = page[i].version
		svc := svcs[i]
		svc.Tags = slices.Clip(svc.Tags) // a caller's append copies
		c.rows[page[i].name] = svc
	}
	if whole && len(c.rows) > len(page) { // every name of page is in rows: the rest are gone
		for name := range c.rows {
			if _, found := slices.BinarySearchFunc(page, name, func(v versioned, name string) int { return strings.Compare(v.name, name) }); !found {
				delete(c.rows, name)
			}
		}
	}
}

// ServicesAfter pages through the services by name (byte order): up to
// limit (0: all) of them named after after. In a read transaction the
// services may come from the cache: their tags and Kubernetes blocks are
// read-only, and so is the whole list (after "", no limit) on SQLite,
// which every whole list at the same version shares: 3 MB of 10,000
// services a list would otherwise copy. There each service's Version is
// its row's.
func (t *Tx) ServicesAfter(ctx context.Context, after string, limit int) ([]service.Service, error) {
	if t.cache == nil {
		return t.readServicesAfter(ctx, after, limit)
	}
	if after == "" && limit <= 0 && t.dialect != Postgres {
		var at int64
		if err := t.tx.GetContext(ctx, &at, `SELECT n FROM service_row_version`); err != nil {
			return nil, mapErr(err)
		}
		if all, ok := t.cache.takeAll(at); ok {
			return all, nil
		}
		all, err := t.servicesByVersion(ctx, after, limit)
		if err == nil {
			t.cache.putAll(at, all)
		}
		return all, err
	}
	return t.servicesByVersion(ctx, after, limit)
}

// servicesByVersion is ServicesAfter reading the page's names and
// versions, then the rows the cache does not hold at those versions.
func (t *Tx) servicesByVersion(ctx context.Context, after string, limit int) ([]service.Service, error) {
	page, err := t.serviceVersions(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]service.Service, len(page))
	missing := t.cache.take(page, out)
	if len(missing) > len(page)/2 {
		// Most of the page changed: read it whole, as without a cache
		// (the same snapshot holds the same rows), and keep all of it.
		query, args := t.servicesPage(after, limit)
		read, err := t.services(ctx, len(page), query, args...)
		if err != nil {
			return nil, err
		}
		if len(read) != len(page) {
			return nil, fmt.Errorf("services: %d rows read where the page named %d", len(read), len(page))
		}
		out, missing = read, missing[:0]
		for i := range page {
			missing = append(missing, i)
		}
	} else if err := t.readMissing(ctx, page, missing, out); err != nil {
		return nil, err
	}
	t.cache.put(page, out, missing, after == "" && limit <= 0)
	return out, nil
}

// serviceVersions reads the names and versions of ServicesAfter's page.
func (t *Tx) serviceVersions(ctx context.Context, after string, limit int) ([]versioned, error) {
	cond, args := t.namedAfter("name", after, limit)
	rows, err := t.tx.QueryContext(ctx, t.tx.Rebind(`SELECT name, `+t.serviceVersion()+` FROM services WHERE `+cond), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var page []versioned
	for rows.Next() {
		var v versioned
		if err := rows.Scan(&v.name, &v.version); err != nil {
			return nil, mapErr(err)
		}
		page = append(page, v)
	}
	return page, mapErr(rows.Err())
}

// readMissing reads the services of page at the indexes missing into out,
// with their tags.
func (t *Tx) readMissing(ctx context.Context, page []versioned, missing []int, out []service.Service) error {
	names := make([]string, len(missing))
	at := make(map[string]int, len(missing))
	for j, i := range missing {
		names[j], at[page[i].name] = page[i].name, i
	}
	read, err := t.servicesNamed(ctx, names, true)
	if err != nil {
		return err
	}
	if len(read) != len(missing) {
		return fmt.Errorf("services: %d rows read where the page named %d", len(read), len(missing))
	}
	for _, svc := range read {
		out[at[svc.Name]] = svc
	}
	return nil
}
