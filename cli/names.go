package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// inventory resolves the uuids the API stores to the names people use. A
// lookup that fails leaves the uuid as it is.
type inventory struct {
	agents        []Agent
	agentByUUID   map[string]Agent
	agentByName   map[string]Agent
	microservices []Microservice
	msByUUID      map[string]Microservice
	msByName      map[string]Microservice // "application/name"
}

func loadInventory(ctx context.Context, c *Client, withMicroservices bool) (*inventory, error) {
	inv := &inventory{agentByUUID: map[string]Agent{}, agentByName: map[string]Agent{},
		msByUUID: map[string]Microservice{}, msByName: map[string]Microservice{}}
	agents, err := c.ListAgents(ctx)
	if err != nil {
		return inv, err
	}
	inv.agents = agents
	for _, a := range agents {
		inv.agentByUUID[a.UUID], inv.agentByName[a.Name] = a, a
	}
	if !withMicroservices {
		return inv, nil
	}
	ms, err := c.ListMicroservices(ctx)
	if err != nil {
		return inv, err
	}
	inv.microservices = ms
	for _, m := range ms {
		inv.msByUUID[m.UUID], inv.msByName[m.Application+"/"+m.Name] = m, m
	}
	return inv, nil
}

// agentName is the name of the agent with uuid (or the uuid).
func (inv *inventory) agentName(uuid string) string {
	if a, ok := inv.agentByUUID[uuid]; ok {
		return a.Name
	}
	return uuid
}

// msUUID resolves "application/name" or a uuid to the uuid.
func (inv *inventory) msUUID(ref string) (string, bool) {
	if m, ok := inv.msByName[ref]; ok {
		return m.UUID, true
	}
	if m, ok := inv.msByUUID[ref]; ok {
		return m.UUID, true
	}
	return "", false
}

// backend says what a service publishes, by name, as the server names
// it: orders/checkout:8080 (a microservice), fog-a:22 (an agent),
// 203.0.113.10:443.
func backend(s Service) string {
	return s.ResourceName + ":" + strconv.Itoa(s.TargetPort)
}

// backendLong is backend with where it runs, for describe.
func (inv *inventory) backendLong(s Service) string {
	switch s.Type {
	case "microservice":
		if m, ok := inv.msByUUID[s.Resource]; ok {
			return fmt.Sprintf("microservice %s/%s (%s) on agent %s, port %d", m.Application, m.Name, m.UUID, inv.agentName(m.Agent), s.TargetPort)
		}
		return fmt.Sprintf("microservice %s, port %d", s.Resource, s.TargetPort)
	case "agent":
		return fmt.Sprintf("agent %s (%s), port %d", inv.agentName(s.Resource), s.Resource, s.TargetPort)
	}
	return fmt.Sprintf("%s %s, port %d", s.Type, s.Resource, s.TargetPort)
}

// endpoint is where clients connect: host:servicePort.
func endpoint(s Service) string {
	if s.ServiceEndpoint == nil || *s.ServiceEndpoint == "" {
		return ""
	}
	ep := *s.ServiceEndpoint
	if s.ServicePort != nil {
		ep += ":" + strconv.Itoa(*s.ServicePort)
	}
	return servedText(s, ep)
}

// servedText marks an endpoint of a service that is not served.
func servedText(s Service, ep string) string {
	if !served(s) {
		return ep + " (not served)"
	}
	return ep
}

// served reports whether traffic to s can flow: a failed service keeps the
// endpoint it had, but its connector, hub listener or Kubernetes Service is
// not in place, so its endpoint and its agents' listeners carry nothing.
func served(s Service) bool { return s.ProvisioningStatus != "failed" }

// allowedFrom is who may reach the open port, as Juju's status shows
// exposure: a LoadBalancer's loadBalancerSourceRanges (anyone when none), a
// NodePort anyone, a ClusterIP the cluster; "" off Kubernetes.
func allowedFrom(s Service) string {
	if s.K8sType == nil {
		return ""
	}
	switch *s.K8sType {
	case "LoadBalancer":
		var cidrs []string
		if raw, ok := s.KubernetesOptions()["loadBalancerSourceRanges"]; ok && json.Unmarshal(raw, &cidrs) == nil && len(cidrs) > 0 {
			return strings.Join(cidrs, ",")
		}
		return "any"
	case "NodePort":
		return "any"
	}
	return "cluster"
}

// status is the provisioning status as a table shows it.
func status(s Service) string {
	if s.ProvisioningStatus == "ready" && !s.Settled() {
		return "pending"
	}
	return s.ProvisioningStatus
}

// openPorts are the ports of a router's listeners, sorted, as Juju prints
// open ports: 10024/tcp,10025/tcp.
func openPorts(rc RouterConfig) []string {
	var ports []int
	var other []string
	for _, l := range rc.Bridges.TCPListeners {
		if p, err := strconv.Atoi(l.Port); err == nil {
			ports = append(ports, p)
		} else if l.Port != "" {
			other = append(other, l.Port+"/tcp")
		}
	}
	slices.Sort(ports)
	out := make([]string, 0, len(ports)+len(other))
	for i, p := range ports {
		if i > 0 && ports[i-1] == p {
			continue
		}
		out = append(out, strconv.Itoa(p)+"/tcp")
	}
	return append(out, other...)
}

// portRanges is how a table shows open ports (openPorts' list): a run of
// three or more consecutive ports as one range, as Juju prints
// 10024-10223/tcp, so a hub with hundreds of services fits a line; shorter
// runs and ports that are not numbers as they are.
func portRanges(ports []string) string {
	num := func(p string) (int, bool) {
		s, ok := strings.CutSuffix(p, "/tcp")
		n, err := strconv.Atoi(s)
		return n, ok && err == nil
	}
	var out []string
	for i := 0; i < len(ports); {
		first, ok := num(ports[i])
		j := i + 1
		for ok && j < len(ports) {
			if n, isNum := num(ports[j]); !isNum || n != first+(j-i) {
				break
			}
			j++
		}
		if j-i >= 3 {
			out = append(out, fmt.Sprintf("%d-%d/tcp", first, first+j-i-1))
		} else {
			out = append(out, ports[i:j]...)
		}
		i = j
	}
	return strings.Join(out, ",")
}
