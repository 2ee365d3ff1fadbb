package service

import "testing"

func TestSameSites(t *testing.T) {
	host, other := "hub.example.com", "other.example.com"
	stored := Placement{ConnectorSite: "fog", HubSite: "hub", Endpoint: &host, BackendAgent: "fog", BridgeAgent: "hub"}
	cases := []struct {
		name   string
		change func(*Placement)
		same   bool
	}{
		{"unchanged", func(*Placement) {}, true},
		{"only the endpoint, which the row keeps apart", func(p *Placement) { p.Endpoint = &other }, true},
		{"connector moved", func(p *Placement) { p.ConnectorSite = "hub" }, false},
		{"hub listener moved", func(p *Placement) { p.HubSite = "hub-2" }, false},
		{"follows another backend agent", func(p *Placement) { p.BackendAgent = "" }, false},
		{"follows another bridge agent", func(p *Placement) { p.BridgeAgent = "hub-2" }, false},
		{"now follows the default router", func(p *Placement) { p.OnDefaultRouter = true }, false},
		{"invalid now: no sites", func(p *Placement) { p.ConnectorSite, p.HubSite = "", "" }, false},
		{"the hub ConfigMap, which the control plane decides", func(p *Placement) { p.HubConfigMap = true }, true},
	}
	for _, c := range cases {
		q := stored
		c.change(&q)
		if got := q.SameSites(stored); got != c.same {
			t.Errorf("%s: SameSites = %v, want %v", c.name, got, c.same)
		}
	}
}
