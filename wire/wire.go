// Package wire holds the JSON bodies of the REST API, declared once: the
// api package answers with them and the cli package decodes them, so the
// two cannot drift apart. No I/O and no rules; the standard library only,
// so that a client pulls in nothing of the server.
//
// Field order is the order the API has always sent; keep it. A pointer
// marks a value that is null when unset.
package wire

import "encoding/json"

// Error is the body of every error answer: the ioFog controller's
// envelope.
type Error struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// AuthError is the body of a 401 or 403: the reference controller's
// ("error": its status text) with Error's name and message. Its keys are
// sorted, as they have always been sent.
type AuthError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Name    string `json:"name"`
}

// Service is a Service as the API answers it.
type Service struct {
	Name          string   `json:"name"`
	Tags          []string `json:"tags"`
	Type          string   `json:"type"`
	Resource      string   `json:"resource"`
	TargetPort    int      `json:"targetPort"`
	DefaultBridge string   `json:"defaultBridge"`
	// Absent, not null, when unset, so that an answer sent back as a
	// request is not a type error.
	ServicePort *int    `json:"servicePort,omitempty"`
	K8sType     *string `json:"k8sType,omitempty"`
	// Kubernetes is spec.kubernetes as the service rules encode it; null
	// when absent.
	Kubernetes         json.RawMessage `json:"kubernetes"`
	BridgePort         int             `json:"bridgePort"`
	ServiceEndpoint    *string         `json:"serviceEndpoint"`
	ProvisioningStatus string          `json:"provisioningStatus"`
	ProvisioningError  *string         `json:"provisioningError"`
	// Generation counts changes of the spec; ObservedGeneration is the
	// generation the last finished reconcile applied.
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
	// ReconcileRequest counts the reconciles asked for (POST .../reconcile,
	// and changes of the agents and microservices the service depends on);
	// ObservedReconcileRequest is the count the last finished reconcile
	// read when it began: once it reaches a request's number, the status
	// is that request's answer.
	ReconcileRequest         int64 `json:"reconcileRequest"`
	ObservedReconcileRequest int64 `json:"observedReconcileRequest"`
	CreatedAt                Time  `json:"createdAt"`
	UpdatedAt                Time  `json:"updatedAt"`
	// Placement is always sent (a DeletingService has none).
	Placement *Placement `json:"placement"`
	// ResourceName and DefaultBridgeName are resource and defaultBridge as
	// people write them, and as a request takes them: a microservice's
	// application/name, an agent's name (its uuid once no agent has it);
	// a k8s or external resource and default-router as they are.
	ResourceName      string `json:"resourceName"`
	DefaultBridgeName string `json:"defaultBridgeName"`
	WorkflowRef
	// ProvisioningMessage says what the status alone does not, when the
	// server knows: why a pending or deleting service waits (no worker
	// polls the task queue), or that clients cannot reach it (no endpoint).
	ProvisioningMessage string `json:"provisioningMessage,omitempty"`
	// Distribution is sent by GET /services/{name} and by dry runs, never
	// by lists: nil is absent, empty is none.
	Distribution []DistributionEntry `json:"distribution,omitzero"`
}

// DeletingService is a deleted service whose objects are still being
// removed: no spec is left.
type DeletingService struct {
	Name               string `json:"name"`
	ProvisioningStatus string `json:"provisioningStatus"`
	WorkflowRef
	ProvisioningMessage string              `json:"provisioningMessage,omitempty"`
	Distribution        []DistributionEntry `json:"distribution,omitzero"`
}

// Placement names the agents (by uuid, then by name) whose routers hold a service's
// connector and hub listener; empty for the Kubernetes hub ConfigMap and
// while the placement is invalid.
type Placement struct {
	ConnectorAgent string `json:"connectorAgent"`
	HubAgent       string `json:"hubAgent"`
	// ConnectorAgentName and HubAgentName are those agents' names.
	ConnectorAgentName string `json:"connectorAgentName"`
	HubAgentName       string `json:"hubAgentName"`
}

// WorkflowRef is where a service's workflow is: its ID, its Temporal
// namespace, and its page in the Temporal Web UI when the server knows
// the UI.
type WorkflowRef struct {
	WorkflowID        string `json:"workflowId"`
	WorkflowNamespace string `json:"workflowNamespace,omitempty"`
	WorkflowURL       string `json:"workflowUrl,omitempty"`
}

// ReconcileAccepted is the answer of POST /services/{name}/reconcile.
type ReconcileAccepted struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflowId"`
	// ReconcileRequest is this request's number (see Service); absent for a
	// deleted service whose objects remain.
	ReconcileRequest int64 `json:"reconcileRequest,omitempty"`
}

// DistributionEntry is one agent of a service's distribution: an agent
// whose router holds the service's listener, or one that should.
type DistributionEntry struct {
	Agent     string `json:"agent"`
	AgentName string `json:"agentName"`
	// Listening: the listener is written in the agent's router config.
	Listening bool `json:"listening"`
	// Wanted: the current tags (or the hub role) select the agent. Wanted
	// and not listening is a pending add; listening and not wanted a
	// pending removal. Always sent.
	Wanted *bool `json:"wanted"`
	// Reason is the agent tag that selects the service, "hub" for the
	// router that holds its hub listener, "" when nothing selects it now.
	Reason string `json:"reason"`
	// WrittenAt is when the listener was last written; nil until it is.
	WrittenAt *Time `json:"writtenAt"`
	// AcknowledgedAt is when the agent acknowledged the change that wrote
	// it (PATCH /agent/config/changes with lastUpdated at least that
	// change's); nil until then.
	AcknowledgedAt *Time `json:"acknowledgedAt"`
	// Rollout is how far the listener has got on the agent's router:
	// applied (its router side reported the router holds it),
	// acknowledged (the agent, which has no router side, acknowledged
	// it), failed or pending, with RolloutReason saying why; "" where the
	// agent does not listen.
	Rollout       string `json:"rollout,omitempty"`
	RolloutReason string `json:"rolloutReason,omitempty"`
}

// AgentService is one service of GET /agents/{agent}/services: what the
// agent's router listens for, or should.
type AgentService struct {
	Service string `json:"service"`
	// BridgePort is nil for a listener of a deleted service that is still
	// being removed.
	BridgePort *int   `json:"bridgePort"`
	Reason     string `json:"reason"`
	Listening  bool   `json:"listening"`
	// Wanted, as DistributionEntry's.
	Wanted    *bool `json:"wanted"`
	WrittenAt *Time `json:"writtenAt"`
	// Acknowledged: the agent applied the change that wrote the listener.
	Acknowledged   bool  `json:"acknowledged"`
	AcknowledgedAt *Time `json:"acknowledgedAt"`
	// Rollout and RolloutReason, as DistributionEntry's.
	Rollout       string `json:"rollout,omitempty"`
	RolloutReason string `json:"rolloutReason,omitempty"`
}

// DistributionPreview is the answer of GET /services/{name}/distribution:
// which agents would listen for the service with some tags, and why.
type DistributionPreview struct {
	Service string   `json:"service"`
	Tags    []string `json:"tags"`
	// IgnoredTags are the previewed tags that are not distribution tokens
	// (they contain ':' or '=').
	IgnoredTags []string       `json:"ignoredTags"`
	Agents      []PreviewAgent `json:"agents"`
}

// PreviewAgent is one agent of a DistributionPreview.
type PreviewAgent struct {
	Agent      string `json:"agent"`
	AgentName  string `json:"agentName"`
	RouterMode string `json:"routerMode"`
	// WouldListen: with the previewed tags, the agent's router would hold
	// the service's listener. Listening: it holds it now.
	WouldListen bool `json:"wouldListen"`
	Listening   bool `json:"listening"`
	// Reasons explains each agent tag, then the hub role, routerMode none
	// or the absence of tags.
	Reasons []Reason `json:"reasons"`
}

// Reason is what one agent tag (or the agent's role) contributes to
// selecting a service.
type Reason struct {
	AgentTag string `json:"agentTag"`
	Code     string `json:"code"`
	// Token is the text after the tag prefix and colon, when there is one.
	Token   string `json:"token,omitempty"`
	Message string `json:"message"`
}

// Self is the signed-in caller (GET /api/v3/user/self): its name (a
// tokens file's entry, an OIDC subject), its role, and which of the
// console's actions it may take (reconcileService).
type Self struct {
	Name    string          `json:"name"`
	Role    string          `json:"role"`
	Actions map[string]bool `json:"actions"`
}

// Agent is an agent as the API answers it.
type Agent struct {
	UUID          string   `json:"uuid"`
	Name          string   `json:"name"`
	Host          string   `json:"host"`
	RouterMode    string   `json:"routerMode"`
	DefaultRouter bool     `json:"defaultRouter"`
	Tags          []string `json:"tags"`
	// UpstreamRouters are agent uuids.
	UpstreamRouters []string `json:"upstreamRouters"`
	CreatedAt       Time     `json:"createdAt"`
	UpdatedAt       Time     `json:"updatedAt"`
	// UpstreamRouterNames are UpstreamRouters' names, in their order.
	UpstreamRouterNames []string `json:"upstreamRouterNames"`
	// Links are the uuids of the routers its router links to: its
	// upstream routers, else the default router (service.Uplinks).
	Links []string `json:"links"`
	// Router is what the agent's router side (svcbridge router-sync) last
	// reported of its router; absent when it never reported.
	Router *AgentRouter `json:"router,omitempty"`
	// ConfigChange is the agent's newest router config change and whether
	// the agent acknowledged it; absent before its first.
	ConfigChange *ConfigChange `json:"configChange,omitempty"`
}

// ConfigChange is an agent's newest router config change.
type ConfigChange struct {
	ChangedAt    Time `json:"changedAt"`
	Acknowledged bool `json:"acknowledged"`
}

// AgentRouter is what an agent's router side last reported.
type AgentRouter struct {
	ReportedAt Time `json:"reportedAt"`
	// AppliedChange is the agent's change (lastUpdated) the router holds;
	// nil while it holds none. Lagging: a later change is not applied yet.
	AppliedChange *int64 `json:"appliedChange"`
	Lagging       bool   `json:"lagging"`
	// Error says why the router does not hold its document (unreachable,
	// a restart due); "" when it does.
	Error string `json:"error"`
	// Failed are the bridges it refused or cannot serve.
	Failed        []FailedBridge `json:"failed"`
	TCPListeners  int            `json:"tcpListeners"`
	TCPConnectors int            `json:"tcpConnectors"`
}

// CreatedAgent is the answer of an agent's create: the only time its
// credential is shown, since only its hash is stored.
type CreatedAgent struct {
	Agent
	Token string `json:"token"`
}

// AgentToken is the answer of POST /agents/{agent}/token. Its keys are
// sorted, as they have always been sent.
type AgentToken struct {
	Name  string `json:"name"`
	Token string `json:"token"`
	UUID  string `json:"uuid"`
}

// Microservice is a microservice as the API answers it (the items of
// MicroserviceList).
type Microservice struct {
	UUID            string `json:"uuid"`
	Application     string `json:"application"`
	Name            string `json:"name"`
	Agent           string `json:"agent"` // uuid
	HostNetworkMode bool   `json:"hostNetworkMode"`
	CreatedAt       Time   `json:"createdAt"`
	UpdatedAt       Time   `json:"updatedAt"`
	// AgentName is Agent's name.
	AgentName string `json:"agentName"`
	// The reference controller's fields, so that ioFog clients read
	// svcbridge's answer as they read the reference's.
	IofogMicroservice
}

// Event is one of a service's events, as Kubernetes' events are shown.
type Event struct {
	Service    string `json:"service"`
	Type       string `json:"type"`
	Reason     string `json:"reason"`
	Message    string `json:"message"`
	Generation int64  `json:"generation,omitempty"`
	// Count is how many times the event happened in a row;
	// FirstTimestamp and LastTimestamp when it first and last did.
	Count          int64 `json:"count"`
	FirstTimestamp Time  `json:"firstTimestamp"`
	LastTimestamp  Time  `json:"lastTimestamp"`
}

// Readiness is the answer of /readyz. Temporal is absent when the store
// does not answer; Worker when the server cannot tell. Its keys are
// sorted, as they have always been sent.
type Readiness struct {
	Status   string `json:"status"`
	Store    string `json:"store"`
	Temporal string `json:"temporal,omitempty"`
	Worker   string `json:"worker,omitempty"`
	// Pollers counts the workers polling the task queue, when Temporal
	// could tell.
	Pollers *int `json:"pollers,omitempty"`
	// Kubernetes is the kube-apiserver's state, on the Kubernetes control
	// plane.
	Kubernetes string `json:"kubernetes,omitempty"`
}

// Health is the answer of /healthz.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// Status is the answer of GET /api/v3/status, in the reference
// controller's shape; its keys are sorted, as they have always been sent.
type Status struct {
	Status    string   `json:"status"`
	Timestamp int64    `json:"timestamp"` // ms since the epoch
	UptimeSec float64  `json:"uptimeSec"`
	Versions  Versions `json:"versions"`
}

// Versions is Status's versions. Controller is the ioFog API version
// svcbridge implements (buildinfo.IofogAPIVersion, N.N.N), which ioFog
// clients check; Svcbridge is svcbridge's own build version
// (buildinfo.Version).
type Versions struct {
	Controller string `json:"controller"`
	Svcbridge  string `json:"svcbridge,omitempty"`
}

// RouterReport is what a router side (svcbridge router-sync) says of its
// router after applying the agent's router document: PUT
// /api/v3/agent/router/status.
type RouterReport struct {
	// LastUpdated acknowledges the changes up to it, as PATCH
	// /agent/config/changes does: the router holds the document that
	// covers them, but for Failed. Absent when the router was not reached.
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
	// Version is the ETag of the document the router was given.
	Version string `json:"version"`
	// Error says why the router does not hold that document (it cannot be
	// reached; it needs a restart to change its id or mode); "" when it
	// does.
	Error string `json:"error"`
	// Failed are the bridges the router refused or cannot serve, each
	// with the router's reason (a port taken on that host).
	Failed []FailedBridge `json:"failed"`
	// TCPListeners and TCPConnectors count the bridges the router holds.
	TCPListeners  int `json:"tcpListeners"`
	TCPConnectors int `json:"tcpConnectors"`
}

// FailedBridge is one bridge a router refused or cannot serve.
type FailedBridge struct {
	Type   string `json:"type"` // tcpListener or tcpConnector
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Settings is the answer of GET /api/v3/settings: the server's settings a
// client needs to write what the server will read as meant (svcbridge
// import maps agent tags to ServiceAnnotationTag and keeps bridge ports
// within BridgePorts).
type Settings struct {
	// ServiceAnnotationTag is SERVICE_ANNOTATION_TAG: an agent tag
	// "<ServiceAnnotationTag>: T" selects the services tagged T.
	ServiceAnnotationTag string `json:"serviceAnnotationTag"`
	// BridgePortsRange is BRIDGE_PORTS_RANGE as configured; BridgePorts
	// its first and last ports.
	BridgePortsRange string    `json:"bridgePortsRange"`
	BridgePorts      PortRange `json:"bridgePorts"`
	// ControlPlane is CONTROL_PLANE: remote or kubernetes.
	ControlPlane string `json:"controlPlane"`
}

// PortRange is an inclusive range of ports.
type PortRange struct {
	First int `json:"first"`
	Last  int `json:"last"`
}
