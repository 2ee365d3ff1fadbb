package routerconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
)

// Ports of a router's own listeners, the ioFog router's: management and
// local clients (AMQP), other interior routers, edge routers.
const (
	AMQPPort        = 5672
	InterRouterPort = 55671
	EdgePort        = 45671
)

// Link roles: an edge router's uplink, and a link between interior routers.
const (
	RoleEdge        = "edge"
	RoleInterRouter = "inter-router"
	RoleNormal      = "normal"
)

// Router modes of a site.
const (
	ModeInterior = "interior"
	ModeEdge     = "edge"
)

// Site is what a router needs beyond bridges to join the network: its id
// and mode, and its links to upstream routers (the ioFog router
// microservice config's metadata, listeners and connectors).
type Site struct {
	ID    string
	Mode  string // ModeInterior or ModeEdge
	Links []Link
}

// Link is a connector to an upstream router.
type Link struct {
	Name string // the upstream agent's uuid
	Host string
	Port int
	Role string // RoleEdge or RoleInterRouter
}

// Document sections the site owns whole, and the metadata keys it sets.
const (
	sectionListeners  = "listeners"
	sectionConnectors = "connectors"
	sectionMetadata   = "metadata"
)

// listeners are the router's own listeners: management on loopback only
// (it is unauthenticated; the router side runs beside the router), and on
// an interior router, the ports other routers dial.
func (s Site) listeners() map[string]any {
	out := map[string]any{}
	add := func(suffix, host string, port int, role string) {
		name := s.ID + "-" + suffix
		out[name] = map[string]any{"name": name, "host": host, "port": strconv.Itoa(port), "role": role}
	}
	add("amqp", "127.0.0.1", AMQPPort, RoleNormal)
	if s.Mode == ModeInterior {
		add("inter-router", "0.0.0.0", InterRouterPort, RoleInterRouter)
		add("edge", "0.0.0.0", EdgePort, RoleEdge)
	}
	return out
}

func (s Site) connectors() map[string]any {
	out := map[string]any{}
	for _, l := range s.Links {
		out[l.Name] = map[string]any{"name": l.Name, "host": l.Host, "port": strconv.Itoa(l.Port), "role": l.Role}
	}
	return out
}

// WithSite writes the site into an agent's router document: metadata's id
// and mode (its other keys kept), and the listeners and connectors
// sections, which the site owns whole. Every other key is kept as it was.
// It reports whether the document changed.
func WithSite(base []byte, s Site) ([]byte, bool, error) {
	d, err := Parse(base)
	if err != nil {
		return nil, false, err
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := d.top[sectionMetadata]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, false, fmt.Errorf("router config: metadata is not an object: %w", err)
		}
	}
	before := maps.Clone(d.top)
	meta["id"], meta["mode"] = mustMarshal(s.ID), mustMarshal(s.Mode)
	d.top[sectionMetadata] = mustMarshal(meta)
	d.top[sectionListeners] = mustMarshal(s.listeners())
	d.top[sectionConnectors] = mustMarshal(s.connectors())
	changed := false
	for _, k := range []string{sectionMetadata, sectionListeners, sectionConnectors} {
		if old, ok := before[k]; !ok || !SameJSON(old, d.top[k]) {
			changed = true
		}
	}
	if !changed {
		return base, false, nil
	}
	return d.Marshal(), true, nil
}

// HasSite reports whether an agent's router document holds a site (its
// router id), as WithSite writes it.
func HasSite(doc []byte) bool {
	d, err := Parse(doc)
	if err != nil {
		return false
	}
	var meta struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(d.top[sectionMetadata], &meta) == nil && meta.ID != ""
}
