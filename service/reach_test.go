package service

import (
	"slices"
	"testing"
)

func TestPassReach(t *testing.T) {
	conn := func(a string) Written { return Written{Agent: a, Connector: true} }
	lis := func(a string) Written { return Written{Agent: a} }
	placed := &Placement{ConnectorSite: "fog", HubSite: "hub"}
	cases := []struct {
		name          string
		written       []Written
		p             *Placement
		selecting     []string
		sites, fanout []string
	}{
		{"new service: its sites, and the agents its tags select", nil, placed, []string{"e2", "e1"},
			[]string{"fog", "hub"}, []string{"e1", "e2"}},
		{"a site its tags also select is reconciled as a site only", nil, placed, []string{"fog", "e1"},
			[]string{"fog", "hub"}, []string{"e1"}},
		{"agents listening now are queued even when no longer selected", []Written{lis("hub"), conn("fog"), lis("old")}, placed, nil,
			[]string{"fog", "hub"}, []string{"old"}},
		{"a moved connector: the old router is a site until cleared", []Written{conn("fog-old"), lis("hub")}, placed, nil,
			[]string{"fog", "fog-old", "hub"}, []string{}},
		{"invalid placement: only where objects remain", []Written{conn("fog"), lis("hub"), lis("e1")}, &Placement{}, []string{"e2"},
			[]string{"fog"}, []string{"e1", "e2", "hub"}},
		{"deleted: connector routers now, listeners through the queue", []Written{conn("hub"), lis("hub"), lis("e1")}, nil, nil,
			[]string{"hub"}, []string{"e1"}},
		{"deleted and gone everywhere", nil, nil, nil, []string{}, []string{}},
		{"Kubernetes hub (no sites but the backend)", nil, &Placement{ConnectorSite: "fog"}, []string{"e1"},
			[]string{"fog"}, []string{"e1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := PassReach(c.written, c.p, c.selecting)
			if !slices.Equal(got.Sites, c.sites) || !slices.Equal(got.Fanout, c.fanout) {
				t.Errorf("sites %v fanout %v, want %v %v", got.Sites, got.Fanout, c.sites, c.fanout)
			}
		})
	}
}

func TestMissingObject(t *testing.T) {
	written := []Written{{Agent: "fog", Connector: true}, {Agent: "hub"}}
	cases := []struct {
		name                string
		written             []Written
		connector, hub, say string
	}{
		{"both in place", written, "fog", "hub", ""},
		{"Kubernetes hub: only the connector counts", written[:1], "fog", "", ""},
		{"no connector", written[1:], "fog", "hub", "the tcpConnector is not on the router of agent fog"},
		{"a listener is not a connector", []Written{{Agent: "fog"}, {Agent: "hub"}}, "fog", "hub", "the tcpConnector is not on the router of agent fog"},
		{"no hub listener", written[:1], "fog", "hub", "the hub tcpListener is not on the router of agent hub"},
		{"a connector on the hub is not its listener", []Written{{Agent: "fog", Connector: true}, {Agent: "hub", Connector: true}}, "fog", "hub",
			"the hub tcpListener is not on the router of agent hub"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MissingObject(c.written, c.connector, c.hub); got != c.say {
				t.Errorf("%q, want %q", got, c.say)
			}
		})
	}
}
