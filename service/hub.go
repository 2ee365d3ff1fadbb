package service

import "svcbridge/routerconfig"

// HubPairs is what the Kubernetes hub ConfigMap's file must hold of one
// service: the pairs to write, and the names of those to remove.
type HubPairs struct {
	Listeners        []routerconfig.Listener
	Connectors       []routerconfig.Connector
	RemoveListeners  []string
	RemoveConnectors []string
}

// PlanHubPairs decides the hub ConfigMap's pairs of service name (svc nil
// when it is deleted): its listener, and its connector when that sits on
// the hub (ConnectorOnHub). A deleted service leaves neither.
func PlanHubPairs(name string, svc *Service) HubPairs {
	if svc == nil {
		return HubPairs{RemoveListeners: []string{routerconfig.ListenerName(name)},
			RemoveConnectors: []string{routerconfig.ConnectorName(name)}}
	}
	p := HubPairs{Listeners: []routerconfig.Listener{Listener(name, svc.BridgePort)}}
	if ConnectorOnHub(svc.Type) {
		p.Connectors = []routerconfig.Connector{Connector(name, svc.TargetPort, Backend{Type: svc.Type, Resource: svc.Resource})}
	} else {
		p.RemoveConnectors = []string{routerconfig.ConnectorName(name)}
	}
	return p
}

// Apply edits the hub file raw as p says; every other pair is kept.
func (p HubPairs) Apply(raw []byte) ([]byte, error) {
	out, err := routerconfig.UpsertPairs(raw, p.Listeners, p.Connectors)
	if err == nil {
		out, err = routerconfig.RemovePairs(out, routerconfig.PairListener, p.RemoveListeners)
	}
	if err == nil {
		out, err = routerconfig.RemovePairs(out, routerconfig.PairConnector, p.RemoveConnectors)
	}
	return out, err
}
