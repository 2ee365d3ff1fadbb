package service

import (
	"strconv"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
)

// EdgeletHost is how an edge router reaches its own agent's host network.
const EdgeletHost = "edgelet.default.svc.bridge.local"

// Backend is what the connector of a service dials, resolved from the
// stored resource. Site is the agent whose router gets the connector.
type Backend struct {
	Type         string
	Resource     string // as stored: microservice uuid, agent uuid, or a host
	RouterMode   string // router mode of the site agent
	Application  string // microservice backends only
	Microservice string
	HostNetwork  bool
}

// ConnectorHost is seed 000's "Connector host" table.
func ConnectorHost(b Backend) string {
	switch b.Type {
	case TypeMicroservice:
		switch {
		case b.RouterMode == inventory.RouterInterior:
			return "127.0.0.1"
		case b.HostNetwork:
			return EdgeletHost
		default:
			return b.Application + "." + b.Microservice
		}
	case TypeAgent:
		if b.RouterMode == inventory.RouterInterior {
			return "127.0.0.1"
		}
		return EdgeletHost
	default:
		return b.Resource
	}
}

// ProcessID is seed 000's processId table.
func ProcessID(b Backend, targetPort int) string {
	port := strconv.Itoa(targetPort)
	switch b.Type {
	case TypeMicroservice:
		return b.Resource
	case TypeAgent:
		return b.Resource + "-local-" + port
	default:
		return b.Resource + "-" + b.Type + "-" + port
	}
}

// Connector is the tcpConnector of service name for backend b.
func Connector(name string, targetPort int, b Backend) routerconfig.Connector {
	return routerconfig.Connector{
		Name:      routerconfig.ConnectorName(name),
		Host:      ConnectorHost(b),
		Port:      strconv.Itoa(targetPort),
		Address:   name,
		ProcessID: ProcessID(b, targetPort),
	}
}

// Listener is the tcpListener of service name, on its bridge port.
func Listener(name string, bridgePort int) routerconfig.Listener {
	return routerconfig.Listener{
		Name:    routerconfig.ListenerName(name),
		Port:    strconv.Itoa(bridgePort),
		Address: name,
	}
}
