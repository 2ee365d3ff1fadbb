package service

// Unreachable says why clients have no endpoint to reach svc at where one
// is expected, "" when they have one. A service whose hub listener is on
// an agent's router (Placement.HubSite: the remote control plane) is
// reached at that agent's host and its bridge port (Place): without the
// host it has no endpoint, however ready its objects are. agentName names
// an agent by uuid, for the reason. No endpoint is expected of a service
// whose placement is invalid (its failure says why), nor of one whose hub
// is the Kubernetes hub ConfigMap: there a LoadBalancer's ingress is the
// endpoint, and a reconcile that finds none fails.
func Unreachable(svc Service, agentName func(uuid string) string) string {
	hub := svc.Placement.HubSite
	if hub == "" || (svc.ServiceEndpoint != nil && *svc.ServiceEndpoint != "") {
		return ""
	}
	return "its hub agent " + agentName(hub) + " has no host, so clients have no address to reach it at"
}
