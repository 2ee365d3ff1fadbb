package api

// Service API tests: every endpoint through the real handler and the real
// store (both dialects), with the recordingReconciler in place of
// Temporal. Provisioning itself is tested in systemtest.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"svcbridge/document"
	"svcbridge/inventory"
	"svcbridge/service"
	"svcbridge/store"
)

const servicesPath = "/api/v3/services"

// planes is one store served twice: by a remote and by a kubernetes
// control plane, so one inventory serves the rules of both.
type planes struct {
	remote, kube *testAPI
	st           *store.Store
	rec          *recordingReconciler
}

// on returns the server of the control plane.
func (p planes) on(plane service.ControlPlane) *testAPI {
	if plane == service.ControlPlaneKubernetes {
		return p.kube
	}
	return p.remote
}

func newPlanes(t *testing.T, dialect string, opts ...func(*Options)) planes {
	t.Helper()
	var o Options
	remote, st, rec := newTestAPI(t, dialect, append(slices.Clone(opts), func(got *Options) { o = *got })...)
	o.ControlPlane = service.ControlPlaneKubernetes
	return planes{remote: remote, kube: serveTestAPI(t, o), st: st, rec: rec}
}

// inventoryFixture is what the Service tests resolve resources against:
//
//	hub      interior, the default router, host hub.example.com
//	core     interior, host core.example.com
//	plant-a  edge, upstream routers hub and core; runs orders/checkout
//	plant-b  edge, upstream router hub only; runs orders/checkout-v2
//	sensor   routerMode none; runs shop/till
type inventoryFixture struct {
	hub, core, plantA, plantB, sensor createdAgent
	checkout, checkoutV2, till        inventory.Microservice
}

func newInventory(t *testing.T, a *testAPI) inventoryFixture {
	t.Helper()
	var f inventoryFixture
	f.hub = createAgent(t, a, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
	f.core = createAgent(t, a, map[string]any{"name": "core", "host": "core.example.com", "routerMode": "interior"})
	f.plantA = createAgent(t, a, map[string]any{"name": "plant-a", "host": "10.0.0.5", "upstreamRouters": []string{"hub", "core"}})
	f.plantB = createAgent(t, a, map[string]any{"name": "plant-b", "host": "10.0.0.6", "upstreamRouters": []string{"hub"}})
	f.sensor = createAgent(t, a, map[string]any{"name": "sensor", "routerMode": "none"})
	f.checkout = createMicroservice(t, a, map[string]any{"application": "orders", "name": "checkout", "agent": "plant-a"})
	f.checkoutV2 = createMicroservice(t, a, map[string]any{"application": "orders", "name": "checkout-v2", "agent": "plant-b"})
	f.till = createMicroservice(t, a, map[string]any{"application": "shop", "name": "till", "agent": "sensor"})
	return f
}

// serviceJSON is a Service as the API returns it; pointers tell null from
// a value.
type serviceJSON struct {
	Name               string              `json:"name"`
	Tags               []string            `json:"tags"`
	Type               string              `json:"type"`
	Resource           string              `json:"resource"`
	TargetPort         int                 `json:"targetPort"`
	DefaultBridge      string              `json:"defaultBridge"`
	ServicePort        *int                `json:"servicePort"`
	K8sType            *string             `json:"k8sType"`
	Kubernetes         *service.Kubernetes `json:"kubernetes"`
	BridgePort         int                 `json:"bridgePort"`
	ServiceEndpoint    *string             `json:"serviceEndpoint"`
	ProvisioningStatus string              `json:"provisioningStatus"`
	ProvisioningError  *string             `json:"provisioningError"`
	Generation         int64               `json:"generation"`
	ObservedGeneration int64               `json:"observedGeneration"`
	ReconcileRequest   int64               `json:"reconcileRequest"`
	ObservedReconcile  int64               `json:"observedReconcileRequest"`
	CreatedAt          time.Time           `json:"createdAt"`
	UpdatedAt          time.Time           `json:"updatedAt"`
	WorkflowID         string              `json:"workflowId"`
}

// serviceKeys are the keys a Service object always has; unsetKeys are
// there only when set (absent, not null, as the reference answers).
var (
	serviceKeys = []string{"name", "tags", "type", "resource", "targetPort", "defaultBridge",
		"kubernetes", "bridgePort", "serviceEndpoint", "provisioningStatus", "provisioningError",
		"generation", "observedGeneration", "reconcileRequest", "observedReconcileRequest", "createdAt", "updatedAt", "workflowId", "placement",
		"resourceName", "defaultBridgeName"}
	unsetKeys = []string{"servicePort", "k8sType"}
)

// decodeService decodes one Service, failing unless it has exactly the
// documented keys (plus the optional others) and tags is a list, never null.
func decodeService(t *testing.T, r *testResponse, others ...string) serviceJSON {
	t.Helper()
	m := r.Map()
	for _, k := range others {
		delete(m, k)
	}
	for _, k := range unsetKeys {
		if v, ok := m[k]; ok && v == nil {
			t.Fatalf("%s: %s is null; an unset field is absent", r.req, k)
		}
		delete(m, k)
	}
	if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, slices.Sorted(slices.Values(serviceKeys))) {
		t.Fatalf("%s: service keys %v, want %v", r.req, keys, slices.Sorted(slices.Values(serviceKeys)))
	}
	if _, ok := m["tags"].([]any); !ok {
		t.Fatalf("%s: tags is %v, want a list", r.req, m["tags"])
	}
	var s serviceJSON
	r.Decode(&s)
	return s
}

func getService(t *testing.T, a *testAPI, name string) serviceJSON {
	t.Helper()
	// GET adds the service's distribution, which the distribution tests
	// cover.
	return decodeService(t, a.Do(http.MethodGet, servicesPath+"/"+name, nil).Want(http.StatusOK), "distribution")
}

func createService(t *testing.T, a *testAPI, body any) serviceJSON {
	t.Helper()
	return decodeService(t, a.JSON(http.MethodPost, servicesPath, body).Want(http.StatusCreated))
}

func createServiceYAML(t *testing.T, a *testAPI, doc string) serviceJSON {
	t.Helper()
	return decodeService(t, a.Upload(http.MethodPost, servicesPath+"/yaml", "service", doc).Want(http.StatusCreated))
}

func listServices(t *testing.T, a *testAPI) []serviceJSON {
	t.Helper()
	r := a.Do(http.MethodGet, servicesPath, nil).Want(http.StatusOK)
	var raw []json.RawMessage
	r.Decode(&raw)
	if raw == nil {
		t.Fatalf("GET %s: %s, want a JSON list", servicesPath, r.Body)
	}
	out := make([]serviceJSON, len(raw))
	for i, b := range raw {
		out[i] = decodeService(t, &testResponse{t: t, req: "GET " + servicesPath, Status: r.Status, Body: b})
	}
	return out
}

func intp(i int) *int       { return &i }
func strp(s string) *string { return &s }
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// wantSpec compares what a client declared (and svcbridge assigned) with a
// returned service; provisioning fields are checked by the callers.
func wantSpec(t *testing.T, got serviceJSON, want serviceJSON) {
	t.Helper()
	type spec struct {
		Name, Type, Resource, DefaultBridge string
		Tags                                []string
		TargetPort, BridgePort              int
		ServicePort, K8sType, Endpoint      any
		Kubernetes                          *service.Kubernetes
	}
	g := spec{got.Name, got.Type, got.Resource, got.DefaultBridge, got.Tags, got.TargetPort, got.BridgePort,
		deref(got.ServicePort), deref(got.K8sType), deref(got.ServiceEndpoint), got.Kubernetes}
	w := spec{want.Name, want.Type, want.Resource, want.DefaultBridge, want.Tags, want.TargetPort, want.BridgePort,
		deref(want.ServicePort), deref(want.K8sType), deref(want.ServiceEndpoint), want.Kubernetes}
	if want.Tags == nil {
		w.Tags = []string{}
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("service %s:\n got %+v\nwant %+v", got.Name, g, w)
	}
}

// wantPending checks the provisioning fields of a service a write has just
// (re)started: pending, no error, at generation, a reconcile having
// finished observed.
func wantPending(t *testing.T, s serviceJSON, generation, observed int64) {
	t.Helper()
	if s.ProvisioningStatus != service.StatusPending || s.ProvisioningError != nil ||
		s.Generation != generation || s.ObservedGeneration != observed || s.WorkflowID != testIDs.Service(s.Name) {
		t.Fatalf("service %s: status %q error %v generation %d/%d workflow %q; want pending, no error, generation %d/%d, workflow %q",
			s.Name, s.ProvisioningStatus, deref(s.ProvisioningError), s.Generation, s.ObservedGeneration, s.WorkflowID,
			generation, observed, testIDs.Service(s.Name))
	}
}

// ---- requests of the bad-input table ----

// svcRequest is one request: a JSON body, a multipart upload, or raw bytes
// with their own content type.
type svcRequest struct {
	method, path string
	contentType  string // raw: sent as is
	body         string
	upload       bool   // body is the file of multipart field `field`
	field        string // default "service"
}

func svcJSONReq(method, path, body string) svcRequest {
	return svcRequest{method: method, path: path, contentType: "application/json", body: body}
}

func svcYAMLReq(method, path, doc string) svcRequest {
	return svcRequest{method: method, path: path, body: doc, upload: true}
}

func svcRawReq(method, path, contentType, body string) svcRequest {
	return svcRequest{method: method, path: path, contentType: contentType, body: body}
}

func (r svcRequest) send(a *testAPI) *testResponse {
	if r.upload {
		field := r.field
		if field == "" {
			field = "service"
		}
		return a.Upload(r.method, r.path, field, r.body)
	}
	var header []string
	if r.contentType != "" {
		header = []string{"Content-Type", r.contentType}
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	return a.Do(r.method, r.path, body, header...)
}

// svcBody marshals base with the pairs of kv set; a nil value removes the key.
func svcBody(base map[string]any, kv ...any) string {
	m := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
		} else {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// k8sMissing is the refusal of a service of type typ that lacks the
// missing Kubernetes Service fields on the Kubernetes control plane: the
// reference's msgK8sNeeds word for word, then what it fails to say.
func k8sMissing(missing, typ string) string {
	fields := map[string]string{
		"k8sType":     "field 'k8sType' (one of LoadBalancer, ClusterIP, NodePort) is",
		"servicePort": "field 'servicePort' (the Kubernetes Service's port) is",
		"both":        "fields 'k8sType' (one of LoadBalancer, ClusterIP, NodePort) and 'servicePort' (the Kubernetes Service's port) are",
	}
	return msgK8sNeeds + ": required " + fields[missing] + " missing: on the Kubernetes control plane a service of type " + typ + " gets a Kubernetes Service"
}

// Messages the reference controller's clients know.
const (
	msgReserved     = `Service name cannot be "controller" or "router" or "router-internal" or "docker" or "podman" or "kubernetes" or "nats" or "nats-headless" or "nats-server"`
	msgK8sEnv       = "Kubernetes environment is required for k8s service type"
	msgK8sNeeds     = "Kubernetes environment is required for k8s service type(LoadBalancer or ClusterIP or NodePort) and service port"
	msgType         = "Changing service type is not allowed. Please delete the service and create a new one with the desired type."
	msgBridge       = "Changing default bridge is not allowed. Please delete the service and create a new one with the desired default bridge."
	msgRename       = "Changing service name is not allowed. Please delete the service and create a new one with the desired name."
	msgNoRouter     = "a TCP bridge service requires a router on the agent"
	msgTooLarge     = "Request body is larger than 65536 bytes"
	msgYAMLTooLarge = "Request body is larger than 8192 bytes"
	// What Kubernetes says of the annotation key "bad key!".
	msgBadAnnotationKey = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

// TestServiceRejectsBadRequests: every validation rule, decoding error and
// lookup failure, on the control plane it belongs to, answers its exact
// status and {"name","message"}, stores nothing and triggers no reconcile.
func TestServiceRejectsBadRequests(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.remote)
		// Services the updates and duplicates work on.
		createService(t, p.remote, map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080, "tags": []string{"checkout"}})
		createService(t, p.remote, map[string]any{"name": "ssh", "type": "agent", "resource": "plant-a", "targetPort": 22, "defaultBridge": "core"})
		createService(t, p.remote, map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443})
		createService(t, p.kube, map[string]any{"name": "lb", "type": "external", "resource": "vendor.example.com", "targetPort": 443,
			"servicePort": 443, "k8sType": "LoadBalancer", "tags": []string{"service.beta.kubernetes.io/aws-load-balancer-type: nlb"}})

		const (
			post, patch, del, get = http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodGet
			remote, kube          = service.ControlPlaneRemote, service.ControlPlaneKubernetes
			validation            = "ValidationError"
			duplicate             = "DuplicatePropertyError"
			missing               = "NotFoundError"
			tooLarge              = "PayloadTooLargeError"
			yamlPath              = servicesPath + "/yaml"
		)
		ext := map[string]any{"name": "new", "type": "external", "resource": "vendor.example.com", "targetPort": 443}
		ms := map[string]any{"name": "new", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}
		agent := map[string]any{"name": "new", "type": "agent", "resource": "plant-a", "targetPort": 22}
		k8s := map[string]any{"name": "new", "type": "k8s", "resource": "payments.payments.svc.cluster.local", "targetPort": 8080}
		create := func(body string) svcRequest { return svcJSONReq(post, servicesPath, body) }
		update := func(name, body string) svcRequest { return svcJSONReq(patch, servicesPath+"/"+name, body) }
		createYAML := func(doc string) svcRequest { return svcYAMLReq(post, yamlPath, doc) }
		updateYAML := func(name, doc string) svcRequest { return svcYAMLReq(patch, yamlPath+"/"+name, doc) }
		// yamlDoc is a kind: Service document with the given metadata and
		// spec lines (each indented under its key).
		yamlDoc := func(metadata, spec []string) string {
			var b strings.Builder
			b.WriteString("apiVersion: iofog.org/v3\nkind: Service\nmetadata:\n")
			for _, l := range metadata {
				b.WriteString("  " + l + "\n")
			}
			b.WriteString("spec:\n")
			for _, l := range spec {
				b.WriteString("  " + l + "\n")
			}
			return b.String()
		}
		extSpec := []string{"type: external", "resource: vendor.example.com", "targetPort: 443"}
		checkoutSpec := []string{"type: microservice", "resource: orders/checkout", "targetPort: 8080"}

		manyTags := make([]string, service.MaxTags+1)
		for i := range manyTags {
			manyTags[i] = fmt.Sprintf("t%d", i)
		}
		bigJSON := svcBody(ext, "tags", []string{strings.Repeat("x", MaxBody)})
		bigYAML := yamlDoc([]string{"name: new", "# " + strings.Repeat("x", MaxYAMLBody)}, extSpec)
		aliasBomb := "kind: Service\nbase: &a [x, x]\n"
		for i := 0; i <= service.MaxYAMLAliases; i++ {
			aliasBomb += fmt.Sprintf("b%d: *a\n", i)
		}
		aliasBomb += "metadata:\n  name: new\nspec:\n  type: external\n  resource: vendor.example.com\n  targetPort: 443\n"

		cases := []struct {
			name    string
			plane   service.ControlPlane // "" is remote
			req     svcRequest
			status  int
			errName string
			message string
		}{
			// Required fields, in the reference's order.
			{"no name", remote, create(svcBody(ext, "name", nil)), 400, validation, "Required field 'name' is missing"},
			{"no type", remote, create(svcBody(ext, "type", nil)), 400, validation, "Required field 'type' is missing"},
			{"no resource", remote, create(svcBody(ext, "resource", nil)), 400, validation, "Required field 'resource' is missing"},
			{"no targetPort", remote, create(svcBody(ext, "targetPort", nil)), 400, validation, "Required field 'targetPort' is missing"},
			{"nothing at all", remote, create(`{}`), 400, validation, "Required field 'name' is missing"},

			// JSON types.
			{"name not a string", remote, create(svcBody(ext, "name", 5)), 400, validation, "Field 'name' is not of a type(s) string"},
			{"type null", remote, create(svcBody(ext, "type", json.RawMessage("null"))), 400, validation, "Field 'type' is not of a type(s) string"},
			{"resource not a string", remote, create(svcBody(ext, "resource", []string{"a"})), 400, validation, "Field 'resource' is not of a type(s) string"},
			{"targetPort a string", remote, create(svcBody(ext, "targetPort", "443")), 400, validation, "Field 'targetPort' is not of a type(s) integer"},
			{"targetPort a fraction", remote, create(svcBody(ext, "targetPort", 443.5)), 400, validation, "Field 'targetPort' is not of a type(s) integer"},
			{"servicePort a bool", remote, create(svcBody(ext, "servicePort", true)), 400, validation, "Field 'servicePort' is not of a type(s) integer"},
			{"defaultBridge a number", remote, create(svcBody(ext, "defaultBridge", 1)), 400, validation, "Field 'defaultBridge' is not of a type(s) string"},
			{"k8sType a list", remote, create(svcBody(ext, "k8sType", []string{})), 400, validation, "Field 'k8sType' is not of a type(s) string"},
			{"tags a string", remote, create(svcBody(ext, "tags", "checkout")), 400, validation, "Field 'tags' is not of a type(s) array"},
			{"tags null", remote, create(svcBody(ext, "tags", json.RawMessage("null"))), 400, validation, "Field 'tags' is not of a type(s) array"},
			{"tag not a string", remote, create(svcBody(ext, "tags", []any{"a", 1})), 400, validation, "Field 'tags[1]' is not of a type(s) string"},

			// Name.
			{"name upper case", remote, create(svcBody(ext, "name", "Checkout")), 400, validation, "Invalid format for field 'name'"},
			{"name with underscore", remote, create(svcBody(ext, "name", "check_out")), 400, validation, "Invalid format for field 'name'"},
			{"name with a dot", remote, create(svcBody(ext, "name", "check.out")), 400, validation, "Invalid format for field 'name'"},
			{"name leading dash", remote, create(svcBody(ext, "name", "-checkout")), 400, validation, "Invalid format for field 'name'"},
			{"name trailing dash", remote, create(svcBody(ext, "name", "checkout-")), 400, validation, "Invalid format for field 'name'"},
			{"name empty", remote, create(svcBody(ext, "name", "")), 400, validation, "Invalid format for field 'name'"},
			{"name 64 characters", remote, create(svcBody(ext, "name", strings.Repeat("a", 64))), 400, validation, "Invalid length for field 'name': must be at most 63 characters"},
			{"reserved controller", remote, create(svcBody(ext, "name", "controller")), 400, validation, msgReserved},
			{"reserved router", remote, create(svcBody(ext, "name", "router")), 400, validation, msgReserved},
			{"reserved router-internal", remote, create(svcBody(ext, "name", "router-internal")), 400, validation, msgReserved},
			{"reserved docker", remote, create(svcBody(ext, "name", "docker")), 400, validation, msgReserved},
			{"reserved podman", remote, create(svcBody(ext, "name", "podman")), 400, validation, msgReserved},
			{"reserved kubernetes", kube, create(svcBody(ext, "name", "kubernetes", "servicePort", 443, "k8sType", "ClusterIP")), 400, validation, msgReserved},
			{"reserved nats", remote, create(svcBody(ext, "name", "nats")), 400, validation, msgReserved},
			{"reserved nats-headless", remote, create(svcBody(ext, "name", "nats-headless")), 400, validation, msgReserved},
			{"reserved nats-server", remote, create(svcBody(ext, "name", "nats-server")), 400, validation, msgReserved},

			// Enums and ports.
			{"unknown type", remote, create(svcBody(ext, "type", "tcp")), 400, validation, "Field type is not one of enum values: microservice,k8s,agent,external"},
			{"unknown k8sType", remote, create(svcBody(ext, "k8sType", "External")), 400, validation, "Field k8sType is not one of enum values: LoadBalancer,ClusterIP,NodePort"},
			{"targetPort 0", remote, create(svcBody(ext, "targetPort", 0)), 400, validation, "Field 'targetPort' must be between 1 and 65535"},
			{"targetPort negative", remote, create(svcBody(ext, "targetPort", -443)), 400, validation, "Field 'targetPort' must be between 1 and 65535"},
			{"targetPort 65536", remote, create(svcBody(ext, "targetPort", 65536)), 400, validation, "Field 'targetPort' must be between 1 and 65535"},
			{"targetPort huge", remote, create(svcBody(ext, "targetPort", json.RawMessage("99999999999999999999999"))), 400, validation, "Field 'targetPort' must be between 1 and 65535"},
			{"servicePort 0", remote, create(svcBody(ext, "servicePort", 0)), 400, validation, "Field 'servicePort' must be between 1 and 65535"},
			{"servicePort 70000 on kubernetes", kube, create(svcBody(ext, "servicePort", 70000, "k8sType", "ClusterIP")), 400, validation, "Field 'servicePort' must be between 1 and 65535"},

			// Control plane.
			{"k8s on remote", remote, create(svcBody(k8s)), 400, validation, msgK8sEnv},
			{"microservice without k8sType on kubernetes", kube, create(svcBody(ms, "servicePort", 80)), 400, validation, k8sMissing("k8sType", "microservice")},
			{"microservice without servicePort on kubernetes", kube, create(svcBody(ms, "k8sType", "LoadBalancer")), 400, validation, k8sMissing("servicePort", "microservice")},
			{"agent without both on kubernetes", kube, create(svcBody(agent)), 400, validation, k8sMissing("both", "agent")},
			{"external without servicePort on kubernetes", kube, create(svcBody(ext, "k8sType", "NodePort")), 400, validation, k8sMissing("servicePort", "external")},

			// spec.kubernetes: refused off Kubernetes, validated as kube-apiserver does.
			{"kubernetes block on remote", remote, create(svcBody(ext, "kubernetes", map[string]any{"externalTrafficPolicy": "Local"})), 400, validation,
				"Field 'kubernetes' applies only on the Kubernetes control plane (CONTROL_PLANE=kubernetes): the remote control plane creates no Kubernetes Service to set it on"},
			{"kubernetes block PATCH on remote", remote, update("vendor", `{"kubernetes":{"loadBalancerSourceRanges":["10.0.0.0/8"]}}`), 400, validation,
				"Field 'kubernetes' applies only on the Kubernetes control plane (CONTROL_PLANE=kubernetes): the remote control plane creates no Kubernetes Service to set it on"},
			{"kubernetes bad CIDR", kube, create(svcBody(ext, "servicePort", 443, "k8sType", "LoadBalancer", "kubernetes", map[string]any{"loadBalancerSourceRanges": []string{"10.0.0.0/8", "10.0.0/8"}})), 400, validation,
				`Invalid field 'kubernetes.loadBalancerSourceRanges[1]': Invalid value: "10.0.0/8": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`},
			{"kubernetes class on a ClusterIP", kube, create(svcBody(ext, "servicePort", 443, "k8sType", "ClusterIP", "kubernetes", map[string]any{"loadBalancerClass": "example.com/lb"})), 400, validation,
				"Invalid field 'kubernetes.loadBalancerClass': Forbidden: may only be used when `k8sType` is 'LoadBalancer'"},
			{"kubernetes unknown option", kube, create(svcBody(ext, "servicePort", 443, "k8sType", "ClusterIP", "kubernetes", map[string]any{"clusterIP": "None"})), 400, validation,
				`Invalid field 'kubernetes': unknown field "clusterIP"`},
			{"kubernetes on type k8s", kube, create(svcBody(k8s, "kubernetes", map[string]any{"internalTrafficPolicy": "Local"})), 400, validation,
				"Field 'kubernetes' is not allowed for type k8s: svcbridge creates no Kubernetes Service for it"},
			{"kubernetes PATCH adds a class to a LoadBalancer", kube, update("lb", `{"kubernetes":{"loadBalancerClass":"example.com/lb"}}`), 400, validation,
				`Invalid field 'kubernetes.loadBalancerClass': Invalid value: "example.com/lb": may not change once set while k8sType stays LoadBalancer (change k8sType, or delete and create the service)`},
			{"kubernetes PATCH policy on a type that forbids it", kube, update("lb", `{"k8sType":"ClusterIP","kubernetes":{"externalTrafficPolicy":"Local"}}`), 400, validation,
				`Invalid field 'kubernetes.externalTrafficPolicy': Invalid value: "Local": may only be set for externally-accessible services (k8sType LoadBalancer or NodePort)`},
			{"kubernetes PATCH svcbridge's label", kube, update("lb", `{"kubernetes":{"labels":{"app.kubernetes.io/instance":"x"}}}`), 400, validation,
				"Invalid field 'kubernetes.labels[app.kubernetes.io/instance]': Forbidden: is one of svcbridge's own labels"},
			{"kubernetes PATCH annotation a tag sets", kube, update("lb", `{"kubernetes":{"annotations":{"service.beta.kubernetes.io/aws-load-balancer-type":"external"}}}`), 400, validation,
				"Invalid field 'kubernetes.annotations[service.beta.kubernetes.io/aws-load-balancer-type]': Forbidden: is also set by a tag: set it in one place"},
			{"kubernetes YAML timeout out of range", kube, createYAML(yamlDoc([]string{"name: new"}, append(slices.Clone(extSpec), "servicePort: 443", "k8sType: ClusterIP",
				"kubernetes: {sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 86401}}}"))), 400, validation,
				"Invalid field 'kubernetes.sessionAffinityConfig.clientIP.timeoutSeconds': Invalid value: 86401: must be greater than 0 and less than 86400"},
			{"kubernetes YAML PATCH policy unknown", kube, updateYAML("lb", yamlDoc([]string{"name: lb"}, append(slices.Clone(extSpec), "servicePort: 443", "k8sType: LoadBalancer",
				"kubernetes:", "  externalTrafficPolicy: Nearest"))), 400, validation,
				`Invalid field 'kubernetes.externalTrafficPolicy': Unsupported value: "Nearest": supported values: "Cluster", "Local"`},

			// Resource by type.
			{"resource empty", remote, create(svcBody(ext, "resource", "")), 400, validation, "Field 'resource' must not be empty"},
			{"external not a host", remote, create(svcBody(ext, "resource", "vendor example")), 400, validation, "Invalid resource 'vendor example' for type external: must be a DNS name or an IP address"},
			{"external a URL", remote, create(svcBody(ext, "resource", "https://vendor.example.com")), 400, validation, "Invalid resource 'https://vendor.example.com' for type external: must be a DNS name or an IP address"},
			{"external host:port", remote, create(svcBody(ext, "resource", "vendor.example.com:443")), 400, validation, "Invalid resource 'vendor.example.com:443' for type external: must be a DNS name or an IP address"},
			{"external IPv6 with zone", remote, create(svcBody(ext, "resource", "fe80::1%eth0")), 400, validation, "Invalid resource 'fe80::1%eth0' for type external: must be a DNS name or an IP address"},
			{"k8s not a host", kube, create(svcBody(k8s, "resource", "Payments_Svc")), 400, validation, "Invalid resource 'Payments_Svc' for type k8s: must be a DNS name or an IP address"},
			{"microservice three segments", remote, create(svcBody(ms, "resource", "orders/checkout/extra")), 400, validation, "Invalid resource 'orders/checkout/extra' for type microservice: must be <application>/<microservice> or a microservice uuid"},
			{"microservice no application", remote, create(svcBody(ms, "resource", "/checkout")), 400, validation, "Invalid resource '/checkout' for type microservice: must be <application>/<microservice> or a microservice uuid"},
			{"microservice unknown name", remote, create(svcBody(ms, "resource", "orders/nope")), 400, validation, "Invalid microservice NAME 'orders/nope'"},
			{"microservice unknown application", remote, create(svcBody(ms, "resource", "nope/checkout")), 400, validation, "Invalid microservice NAME 'nope/checkout'"},
			{"microservice unknown uuid", remote, create(svcBody(ms, "resource", "4b0e8f34-0000-4000-8000-000000000000")), 400, validation, "Invalid microservice UUID '4b0e8f34-0000-4000-8000-000000000000'"},
			{"microservice on an agent without router", remote, create(svcBody(ms, "resource", "shop/till")), 400, validation, "Agent sensor has routerMode none: " + msgNoRouter},
			{"microservice by uuid on an agent without router", kube, create(svcBody(ms, "resource", f.till.UUID, "servicePort", 80, "k8sType", "ClusterIP")), 400, validation, "Agent sensor has routerMode none: " + msgNoRouter},
			{"agent unknown", remote, create(svcBody(agent, "resource", "nope")), 400, validation, "Invalid ioFog UUID 'nope'"},
			{"agent without router", remote, create(svcBody(agent, "resource", "sensor")), 400, validation, "Agent sensor has routerMode none: " + msgNoRouter},
			{"agent by uuid without router", remote, create(svcBody(agent, "resource", f.sensor.UUID)), 400, validation, "Agent sensor has routerMode none: " + msgNoRouter},

			// defaultBridge.
			{"external with a custom bridge", remote, create(svcBody(ext, "defaultBridge", "core")), 400, validation, "Invalid default bridge, If service type is not microservice, defaultBridge must be default-router'core'"},
			{"k8s with a custom bridge", kube, create(svcBody(k8s, "defaultBridge", "core")), 400, validation, "Invalid default bridge, If service type is not microservice, defaultBridge must be default-router'core'"},
			{"bridge unknown", remote, create(svcBody(ms, "defaultBridge", "nope")), 400, validation, "Invalid router 'nope'"},
			{"bridge without router", remote, create(svcBody(ms, "defaultBridge", "sensor")), 400, validation, "Invalid router 'sensor'"},
			{"bridge not connected", remote, create(svcBody(agent, "resource", "plant-b", "defaultBridge", "core")), 400, validation, "Invalid router connection, router core is not connected to plant-b"},
			{"bridge by uuid not connected", remote, create(svcBody(ms, "resource", "orders/checkout-v2", "defaultBridge", f.core.UUID)), 400, validation, "Invalid router connection, router core is not connected to plant-b"},
			{"bridge is the backend itself", remote, create(svcBody(agent, "defaultBridge", "plant-a")), 400, validation, "Invalid router connection, router plant-a is not connected to plant-a"},
			{"backend without router before bridge", remote, create(svcBody(agent, "resource", "sensor", "defaultBridge", "core")), 400, validation, "Agent sensor has routerMode none: " + msgNoRouter},

			// Tags.
			{"blank tag", remote, create(svcBody(ext, "tags", []string{"checkout", " "})), 400, validation, "Field 'tags[1]' must not be empty or blank"},
			{"too many tags", remote, create(svcBody(ext, "tags", manyTags)), 400, validation, "Field 'tags' has 65 tags, more than the limit of 64"},
			{"tag too long", remote, create(svcBody(ext, "tags", []string{strings.Repeat("t", service.MaxTagLength+1)})), 400, validation, "Field 'tags[0]' is longer than 1024 characters"},
			{"tag not an annotation key on kubernetes", kube, create(svcBody(ms, "servicePort", 80, "k8sType", "ClusterIP", "tags", []string{"checkout", "bad key!: x"})), 400, validation, "Invalid tag 'bad key!: x': " + msgBadAnnotationKey},

			// Duplicates: checked after validation, on either plane and
			// either endpoint.
			{"duplicate name", remote, create(svcBody(ext, "name", "checkout")), 409, duplicate, "Service with name checkout already exists"},
			{"duplicate name on kubernetes", kube, create(svcBody(ext, "name", "lb", "servicePort", 443, "k8sType", "ClusterIP")), 409, duplicate, "Service with name lb already exists"},
			{"duplicate name with an unknown agent", remote, create(svcBody(agent, "name", "checkout", "resource", "nope")), 409, duplicate, "Service with name checkout already exists"},
			{"duplicate name by YAML", remote, createYAML(yamlDoc([]string{"name: vendor"}, extSpec)), 409, duplicate, "Service with name vendor already exists"},

			// Bodies.
			{"JSON text/plain", remote, svcRawReq(post, servicesPath, "text/plain", svcBody(ext)), 400, validation, "Content-Type must be application/json"},
			{"JSON no content type", remote, svcRawReq(post, servicesPath, "", svcBody(ext)), 400, validation, "Content-Type must be application/json"},
			{"JSON sent as multipart", remote, svcYAMLReq(post, servicesPath, svcBody(ext)), 400, validation, "Content-Type must be application/json"},
			{"JSON empty", remote, create(""), 400, validation, "Invalid JSON: empty body"},
			{"JSON truncated", remote, create(`{"name":`), 400, validation, "Invalid JSON: unexpected EOF"},
			{"JSON trailing comma", remote, create(`{"name":"new",}`), 400, validation, "Invalid JSON: invalid character '}' looking for beginning of object key string"},
			{"JSON two values", remote, create(svcBody(ext) + ` {}`), 400, validation, "Invalid JSON: unexpected data after the top-level value"},
			{"JSON array", remote, create(`[` + svcBody(ext) + `]`), 400, validation, "Field 'instance' is not of a type(s) object"},
			{"JSON over 64 KiB", remote, create(bigJSON), 413, tooLarge, msgTooLarge},

			// YAML create.
			{"YAML not multipart", remote, svcRawReq(post, yamlPath, "application/yaml", yamlDoc([]string{"name: new"}, extSpec)), 400, validation, "Content-Type must be multipart/form-data with the document in field 'service'"},
			{"YAML multipart without boundary", remote, svcRawReq(post, yamlPath, "multipart/form-data", "x"), 400, validation, "Invalid multipart form: no multipart boundary param in Content-Type"},
			{"YAML multipart without parts", remote, svcRawReq(post, yamlPath, "multipart/form-data; boundary=zz", "--zz--\r\n"), 400, validation, "Missing file in multipart field 'service'"},
			{"YAML in another field", remote, svcRequest{method: post, path: yamlPath, body: yamlDoc([]string{"name: new"}, extSpec), upload: true, field: "file"}, 400, validation, "Missing file in multipart field 'service'"},
			{"YAML over 8 KiB", remote, createYAML(bigYAML), 413, tooLarge, msgYAMLTooLarge},
			{"YAML broken", remote, createYAML("kind: Service\nmetadata: [\n"), 400, validation, "Error parsing YAML: line 2: did not find expected node content"},
			{"YAML two documents", remote, createYAML(yamlDoc([]string{"name: new"}, extSpec) + "---\n" + yamlDoc([]string{"name: other"}, extSpec)), 400, validation, "Error parsing YAML: expected a single document in the stream, but found more"},
			{"YAML empty", remote, createYAML(""), 400, validation, "Invalid YAML format: missing kind field"},
			{"YAML a list", remote, createYAML("- kind: Service\n"), 400, validation, "Invalid YAML format: missing kind field"},
			{"YAML no kind", remote, createYAML("metadata:\n  name: new\nspec:\n  type: external\n"), 400, validation, "Invalid YAML format: missing kind field"},
			{"YAML kind Agent", remote, createYAML(strings.Replace(yamlDoc([]string{"name: new"}, extSpec), "kind: Service", "kind: Agent", 1)), 400, validation, "Invalid kind Agent"},
			{"YAML kind lower case", remote, createYAML(strings.Replace(yamlDoc([]string{"name: new"}, extSpec), "kind: Service", "kind: service", 1)), 400, validation, "Invalid kind service"},
			{"YAML no metadata", remote, createYAML("kind: Service\nspec:\n  type: external\n"), 400, validation, "Invalid YAML format: missing metadata or spec"},
			{"YAML no spec", remote, createYAML("kind: Service\nmetadata:\n  name: new\n"), 400, validation, "Invalid YAML format: missing metadata or spec"},
			{"YAML spec null", remote, createYAML("kind: Service\nmetadata:\n  name: new\nspec:\n"), 400, validation, "Invalid YAML format: missing metadata or spec"},
			{"YAML metadata a string", remote, createYAML("kind: Service\nmetadata: new\nspec:\n  type: external\n"), 400, validation, "Invalid YAML format: metadata and spec must be mappings"},
			{"YAML no name", remote, createYAML(yamlDoc([]string{"tags: [a]"}, extSpec)), 400, validation, "Required field 'name' is missing"},
			{"YAML no targetPort", remote, createYAML(yamlDoc([]string{"name: new"}, extSpec[:2])), 400, validation, "Required field 'targetPort' is missing"},
			{"YAML quoted port", remote, createYAML(yamlDoc([]string{"name: new"}, []string{"type: external", "resource: vendor.example.com", `targetPort: "443"`})), 400, validation, "Field 'targetPort' is not of a type(s) integer"},
			{"YAML numeric name", remote, createYAML(yamlDoc([]string{"name: 123"}, extSpec)), 400, validation, "Field 'name' is not of a type(s) string"},
			{"YAML empty tags", remote, createYAML(yamlDoc([]string{"name: new", "tags:"}, extSpec)), 400, validation, "Field 'tags' is not of a type(s) array"},
			{"YAML tag a number", remote, createYAML(yamlDoc([]string{"name: new", "tags: [a, 1]"}, extSpec)), 400, validation, "Field 'tags[1]' is not of a type(s) string"},
			{"YAML duplicated key", remote, createYAML(yamlDoc([]string{"name: new", "name: other"}, extSpec)), 400, validation, "Error parsing YAML: line 5: duplicated mapping key 'name'"},
			{"YAML merge key", remote, createYAML("kind: Service\nspec: &b\n  type: external\nmetadata:\n  <<: *b\n"), 400, validation, "Error parsing YAML: line 5: merge keys ('<<') are not supported"},
			{"YAML alias bomb", remote, createYAML(aliasBomb), 400, validation, fmt.Sprintf("Error parsing YAML: more than %d aliases", service.MaxYAMLAliases)},
			{"YAML of too many values", remote, createYAML(yamlDoc([]string{"name: new", "tags: [" + strings.Repeat("a,", document.MaxYAMLValues) + "a]"}, extSpec)), 400, validation, "Error parsing YAML: more than 512 keys and items"},
			{"YAML bad name", remote, createYAML(yamlDoc([]string{"name: New"}, extSpec)), 400, validation, "Invalid format for field 'name'"},
			{"YAML k8s on remote", remote, createYAML(yamlDoc([]string{"name: new"}, []string{"type: k8s", "resource: payments.payments.svc.cluster.local", "targetPort: 8080"})), 400, validation, msgK8sEnv},

			// JSON PATCH.
			{"PATCH unknown service", remote, update("nope", `{"targetPort":1}`), 404, missing, "Service with name nope not found"},
			{"PATCH type", remote, update("checkout", `{"type":"agent","resource":"plant-a"}`), 400, validation, msgType},
			{"PATCH type to k8s on remote", remote, update("checkout", `{"type":"k8s","resource":"payments.payments.svc.cluster.local"}`), 400, validation, msgType},
			{"PATCH type on kubernetes", kube, update("lb", `{"type":"k8s"}`), 400, validation, msgType},
			{"PATCH name", remote, update("checkout", `{"name":"checkout-2"}`), 400, validation, msgRename},
			{"PATCH defaultBridge away from default-router", remote, update("checkout", `{"defaultBridge":"core"}`), 400, validation, msgBridge},
			{"PATCH defaultBridge to default-router", remote, update("ssh", `{"defaultBridge":"default-router"}`), 400, validation, msgBridge},
			{"PATCH defaultBridge to another router", remote, update("ssh", `{"defaultBridge":"hub"}`), 400, validation, msgBridge},
			{"PATCH defaultBridge of external", remote, update("vendor", `{"defaultBridge":"core"}`), 400, validation, msgBridge},
			{"PATCH targetPort 0", remote, update("checkout", `{"targetPort":0}`), 400, validation, "Field 'targetPort' must be between 1 and 65535"},
			{"PATCH servicePort 70000", remote, update("checkout", `{"servicePort":70000}`), 400, validation, "Field 'servicePort' must be between 1 and 65535"},
			{"PATCH servicePort null", kube, update("lb", `{"servicePort":null}`), 400, validation, "Field 'servicePort' is not of a type(s) integer"},
			{"PATCH k8sType unknown", kube, update("lb", `{"k8sType":"Ingress"}`), 400, validation, "Field k8sType is not one of enum values: LoadBalancer,ClusterIP,NodePort"},
			{"PATCH tags null", remote, update("checkout", `{"tags":null}`), 400, validation, "Field 'tags' is not of a type(s) array"},
			{"PATCH tag not an annotation key", kube, update("lb", `{"tags":["bad key!: x"]}`), 400, validation, "Invalid tag 'bad key!: x': " + msgBadAnnotationKey},
			{"PATCH resource unknown", remote, update("checkout", `{"resource":"orders/nope"}`), 400, validation, "Invalid microservice NAME 'orders/nope'"},
			{"PATCH resource to an agent without router", remote, update("checkout", `{"resource":"shop/till"}`), 400, validation, "Agent sensor has routerMode none: " + msgNoRouter},
			{"PATCH resource off the bridge", remote, update("ssh", `{"resource":"plant-b"}`), 400, validation, "Invalid router connection, router core is not connected to plant-b"},
			{"PATCH external resource not a host", remote, update("vendor", `{"resource":"not a host"}`), 400, validation, "Invalid resource 'not a host' for type external: must be a DNS name or an IP address"},
			{"PATCH text/plain", remote, svcRawReq(patch, servicesPath+"/checkout", "text/plain", `{"targetPort":1}`), 400, validation, "Content-Type must be application/json"},
			{"PATCH broken JSON", remote, update("checkout", `{"targetPort":`), 400, validation, "Invalid JSON: unexpected EOF"},
			{"PATCH JSON array", remote, update("checkout", `[]`), 400, validation, "Field 'instance' is not of a type(s) object"},
			{"PATCH over 64 KiB", remote, update("checkout", bigJSON), 413, tooLarge, msgTooLarge},

			// YAML PATCH: the whole document.
			{"YAML PATCH other name", remote, updateYAML("checkout", yamlDoc([]string{"name: other"}, checkoutSpec)), 400, validation, "Service name in YAML (other) doesn't match endpoint path (checkout)"},
			{"YAML PATCH no name", remote, updateYAML("checkout", yamlDoc([]string{"tags: [checkout]"}, checkoutSpec)), 400, validation, "Service name in YAML (undefined) doesn't match endpoint path (checkout)"},
			{"YAML PATCH unknown service", remote, updateYAML("nope", yamlDoc([]string{"name: nope"}, extSpec)), 404, missing, "Service with name nope not found"},
			{"YAML PATCH no type", remote, updateYAML("checkout", yamlDoc([]string{"name: checkout"}, checkoutSpec[1:])), 400, validation, "Required field 'type' is missing"},
			{"YAML PATCH type", remote, updateYAML("vendor", yamlDoc([]string{"name: vendor"}, []string{"type: agent", "resource: plant-a", "targetPort: 22"})), 400, validation, msgType},
			{"YAML PATCH omits a custom bridge", remote, updateYAML("ssh", yamlDoc([]string{"name: ssh"}, []string{"type: agent", "resource: plant-a", "targetPort: 22"})), 400, validation, msgBridge},
			{"YAML PATCH omits k8sType on kubernetes", kube, updateYAML("lb", yamlDoc([]string{"name: lb"}, append(slices.Clone(extSpec), "servicePort: 443"))), 400, validation, k8sMissing("k8sType", "external")},
			{"YAML PATCH in another field", remote, svcRequest{method: patch, path: yamlPath + "/checkout", body: yamlDoc([]string{"name: checkout"}, checkoutSpec), upload: true, field: "file"}, 400, validation, "Missing file in multipart field 'service'"},
			{"YAML PATCH not multipart", remote, svcJSONReq(patch, yamlPath+"/checkout", `{"targetPort":1}`), 400, validation, "Content-Type must be multipart/form-data with the document in field 'service'"},
			{"YAML PATCH two documents", remote, updateYAML("checkout", yamlDoc([]string{"name: checkout"}, checkoutSpec)+"---\n"), 400, validation, "Error parsing YAML: expected a single document in the stream, but found more"},
			{"YAML PATCH over 8 KiB", remote, updateYAML("checkout", bigYAML), 413, tooLarge, msgYAMLTooLarge},

			// Unknown services and routes.
			{"GET unknown service", remote, svcJSONReq(get, servicesPath+"/nope", ""), 404, missing, "Service with name nope not found"},
			{"DELETE unknown service", remote, svcJSONReq(del, servicesPath+"/nope", ""), 404, missing, "Service with name nope not found"},
			{"reconcile unknown service", remote, svcJSONReq(post, servicesPath+"/nope/reconcile", ""), 404, missing, "Service with name nope not found"},
			{"PUT is not a route", remote, svcJSONReq(http.MethodPut, servicesPath+"/checkout", svcBody(ext)), 404, missing, "Route PUT /api/v3/services/checkout not found"},
		}
		p.rec.Reset()
		before := snapshot(t, p.st)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := tc.req.send(p.on(tc.plane))
				r.t = t
				r.WantError(tc.status, tc.errName, tc.message)
				if after := snapshot(t, p.st); after != before {
					t.Fatalf("the refused request changed the store:\nbefore %s\nafter  %s", before, after)
				}
				if n := p.rec.Calls(); n != 0 {
					t.Fatalf("the refused request triggered %d reconciles", n)
				}
			})
		}
	})
}

// TestServiceCreateOnRemote: the remote control plane resolves resource
// and defaultBridge to uuids, makes servicePort the assigned bridgePort and
// serviceEndpoint the hub's host, drops k8sType, and ignores what a client
// sends for the fields svcbridge assigns. The answer is the stored service.
func TestServiceCreateOnRemote(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.remote)
		p.rec.Reset()
		start := time.Now().Add(-time.Second)

		r := p.remote.JSON(http.MethodPost, servicesPath, map[string]any{
			"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080,
			"tags":        []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"},
			"servicePort": 80, "k8sType": "LoadBalancer",
			// Assigned by svcbridge: never taken from a client.
			"bridgePort": 5, "serviceEndpoint": "evil.example.com", "provisioningStatus": "ready",
			"provisioningError": "x", "generation": 7, "observedGeneration": 7, "workflowId": "w",
			"reconcileRequest": 7, "observedReconcileRequest": 7,
			"createdAt": "2000-01-01T00:00:00Z",
		}).Want(http.StatusCreated)
		got := decodeService(t, r)
		wantSpec(t, got, serviceJSON{Name: "checkout", Type: "microservice", Resource: f.checkout.UUID, TargetPort: 8080,
			Tags: []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}, DefaultBridge: "default-router",
			BridgePort: 10024, ServicePort: intp(10024), ServiceEndpoint: strp("hub.example.com")})
		wantPending(t, got, 1, 0)
		if got.CreatedAt.Before(start) || got.UpdatedAt.Before(got.CreatedAt) {
			t.Fatalf("createdAt %v, updatedAt %v: not the time of the create", got.CreatedAt, got.UpdatedAt)
		}
		if g := getService(t, p.remote, "checkout"); !sameService(got, g) {
			t.Fatalf("the create answered\n%+v\nbut GET answers\n%+v", got, g)
		}

		for _, tc := range []struct {
			name string
			body map[string]any
			want serviceJSON
		}{
			{"agent by name behind a custom bridge by name", map[string]any{"name": "ssh", "type": "agent", "resource": "plant-a", "targetPort": 22, "defaultBridge": "core"},
				serviceJSON{Type: "agent", Resource: f.plantA.UUID, TargetPort: 22, DefaultBridge: f.core.UUID, ServiceEndpoint: strp("core.example.com")}},
			{"agent by uuid behind a custom bridge by uuid", map[string]any{"name": "ssh-b", "type": "agent", "resource": f.plantB.UUID, "targetPort": 22, "defaultBridge": f.hub.UUID},
				serviceJSON{Type: "agent", Resource: f.plantB.UUID, TargetPort: 22, DefaultBridge: f.hub.UUID, ServiceEndpoint: strp("hub.example.com")}},
			{"microservice by uuid", map[string]any{"name": "v2", "type": "microservice", "resource": f.checkoutV2.UUID, "targetPort": 1},
				serviceJSON{Type: "microservice", Resource: f.checkoutV2.UUID, TargetPort: 1, DefaultBridge: "default-router", ServiceEndpoint: strp("hub.example.com")}},
			{"external IPv4, empty defaultBridge", map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 65535, "defaultBridge": "", "servicePort": 65535},
				serviceJSON{Type: "external", Resource: "203.0.113.10", TargetPort: 65535, DefaultBridge: "default-router", ServiceEndpoint: strp("hub.example.com")}},
			{"external IPv6, integral float port", map[string]any{"name": "v6", "type": "external", "resource": "2001:db8::10", "targetPort": 443.0},
				serviceJSON{Type: "external", Resource: "2001:db8::10", TargetPort: 443, DefaultBridge: "default-router", ServiceEndpoint: strp("hub.example.com")}},
			{"63-character name, tags that are no annotations", map[string]any{"name": strings.Repeat("a", 62) + "0", "type": "external", "resource": "vendor.example.com", "targetPort": 443,
				"tags": []string{"bad key!: x", "a=b", "checkout"}},
				serviceJSON{Type: "external", Resource: "vendor.example.com", TargetPort: 443, DefaultBridge: "default-router", ServiceEndpoint: strp("hub.example.com"),
					Tags: []string{"bad key!: x", "a=b", "checkout"}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := createService(t, p.remote, tc.body)
				want := tc.want
				want.Name = tc.body["name"].(string)
				want.BridgePort = got.BridgePort
				want.ServicePort = intp(got.BridgePort)
				wantSpec(t, got, want)
				wantPending(t, got, 1, 0)
				if !sameService(got, getService(t, p.remote, want.Name)) {
					t.Fatal("the create answered another service than GET")
				}
			})
		}
		// Ports are handed out in order, and every create started a reconcile.
		var ports []int
		for _, s := range listServices(t, p.remote) {
			ports = append(ports, s.BridgePort)
		}
		if slices.Sort(ports); !slices.Equal(ports, []int{10024, 10025, 10026, 10027, 10028, 10029, 10030}) {
			t.Fatalf("bridge ports %v", ports)
		}
		if got, want := p.rec.Services(), []string{"checkout", "ssh", "ssh-b", "v2", "vendor", "v6", strings.Repeat("a", 62) + "0"}; !slices.Equal(got, want) {
			t.Fatalf("reconciles %v, want %v", got, want)
		}
	})
}

// sameService compares two services as served, times by instant.
func sameService(a, b serviceJSON) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) {
		return false
	}
	a.CreatedAt, a.UpdatedAt = b.CreatedAt, b.UpdatedAt
	return reflect.DeepEqual(a, b)
}

// TestServiceCreateOnKubernetes: servicePort and k8sType are kept as sent,
// serviceEndpoint waits for Kubernetes (a client's value is ignored), and
// type k8s needs neither; only the tags of a Kubernetes Service must be
// valid annotations.
func TestServiceCreateOnKubernetes(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.kube)
		for _, tc := range []struct {
			name string
			body map[string]any
			want serviceJSON
		}{
			{"microservice LoadBalancer", map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080,
				"servicePort": 80, "k8sType": "LoadBalancer", "serviceEndpoint": "evil.example.com", "bridgePort": 1,
				"tags": []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb", "example.com/owner = team-a"}},
				serviceJSON{Type: "microservice", Resource: f.checkout.UUID, TargetPort: 8080, ServicePort: intp(80), K8sType: strp("LoadBalancer"),
					DefaultBridge: "default-router", Tags: []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb", "example.com/owner = team-a"}}},
			{"agent NodePort behind a custom bridge", map[string]any{"name": "ssh", "type": "agent", "resource": "plant-a", "targetPort": 22,
				"servicePort": 2222, "k8sType": "NodePort", "defaultBridge": "core"},
				serviceJSON{Type: "agent", Resource: f.plantA.UUID, TargetPort: 22, ServicePort: intp(2222), K8sType: strp("NodePort"), DefaultBridge: f.core.UUID}},
			{"external ClusterIP", map[string]any{"name": "vendor", "type": "external", "resource": "vendor.example.com", "targetPort": 443,
				"servicePort": 443, "k8sType": "ClusterIP"},
				serviceJSON{Type: "external", Resource: "vendor.example.com", TargetPort: 443, ServicePort: intp(443), K8sType: strp("ClusterIP"), DefaultBridge: "default-router"}},
			{"k8s without servicePort and k8sType, tags that are no annotations", map[string]any{"name": "payments", "type": "k8s",
				"resource": "payments.payments.svc.cluster.local", "targetPort": 8080, "tags": []string{"bad key!: x"}},
				serviceJSON{Type: "k8s", Resource: "payments.payments.svc.cluster.local", TargetPort: 8080, DefaultBridge: "default-router", Tags: []string{"bad key!: x"}}},
			{"k8s with servicePort and k8sType, kept as sent", map[string]any{"name": "ledger", "type": "k8s",
				"resource": "10.96.0.20", "targetPort": 9000, "servicePort": 90, "k8sType": "ClusterIP", "defaultBridge": "default-router"},
				serviceJSON{Type: "k8s", Resource: "10.96.0.20", TargetPort: 9000, ServicePort: intp(90), K8sType: strp("ClusterIP"), DefaultBridge: "default-router"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := createService(t, p.kube, tc.body)
				want := tc.want
				want.Name = tc.body["name"].(string)
				want.BridgePort = got.BridgePort
				wantSpec(t, got, want)
				wantPending(t, got, 1, 0)
				if got.BridgePort < 10024 || !sameService(got, getService(t, p.kube, want.Name)) {
					t.Fatalf("bridge port %d, or the create answered another service than GET", got.BridgePort)
				}
			})
		}
	})
}

// The three YAML examples of seed 000, verbatim.
const (
	seedRemote = `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
  tags:
    - checkout          # distribution token; matched against agent tags
spec:
  type: microservice
  resource: orders/checkout    # <application>/<microservice>, or a microservice uuid
  targetPort: 8080
  defaultBridge: default-router
`
	seedKubernetes = `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
  tags:
    - checkout
    # contains ":", so this is a Kubernetes annotation only, not a distribution tag
    - "service.beta.kubernetes.io/aws-load-balancer-type: nlb"
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  servicePort: 80
  k8sType: LoadBalancer
  defaultBridge: default-router
`
	seedK8s = `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: payments
  tags:
    - payments
spec:
  type: k8s
  resource: payments.payments.svc.cluster.local
  targetPort: 8080
  defaultBridge: default-router
`
)

// TestServiceSeedExamples: the seed's three YAML examples are accepted as
// written, each on the control plane it targets.
func TestServiceSeedExamples(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.remote)

		got := createServiceYAML(t, p.remote, seedRemote)
		wantSpec(t, got, serviceJSON{Name: "checkout", Tags: []string{"checkout"}, Type: "microservice", Resource: f.checkout.UUID,
			TargetPort: 8080, DefaultBridge: "default-router", BridgePort: 10024, ServicePort: intp(10024), ServiceEndpoint: strp("hub.example.com")})
		wantPending(t, got, 1, 0)
		// The same name on the other plane: free it first.
		p.remote.Do(http.MethodDelete, servicesPath+"/checkout", nil).Want(http.StatusNoContent)

		got = createServiceYAML(t, p.kube, seedKubernetes)
		wantSpec(t, got, serviceJSON{Name: "checkout", Tags: []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"},
			Type: "microservice", Resource: f.checkout.UUID, TargetPort: 8080, DefaultBridge: "default-router", BridgePort: 10024,
			ServicePort: intp(80), K8sType: strp("LoadBalancer")})
		wantPending(t, got, 1, 0)

		got = createServiceYAML(t, p.kube, seedK8s)
		wantSpec(t, got, serviceJSON{Name: "payments", Tags: []string{"payments"}, Type: "k8s", Resource: "payments.payments.svc.cluster.local",
			TargetPort: 8080, DefaultBridge: "default-router", BridgePort: 10025})
		wantPending(t, got, 1, 0)

		// Each is also a valid update of itself, one that changes nothing.
		p.kube.Upload(http.MethodPatch, servicesPath+"/yaml/checkout", "service", seedKubernetes).Want(http.StatusNoContent)
		p.kube.Upload(http.MethodPatch, servicesPath+"/yaml/payments", "service", seedK8s).Want(http.StatusNoContent)
		if got := getService(t, p.kube, "payments"); got.Generation != 1 || !slices.Equal(got.Tags, []string{"payments"}) {
			t.Fatalf("payments after its own YAML: %+v", got)
		}
	})
}

// TestServiceListIsSortedByName: the list is every service, sorted by name
// byte-wise on both dialects, each element as GET shows it; no services is
// an empty list, not null.
func TestServiceListIsSortedByName(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.remote)
		if r := p.remote.Do(http.MethodGet, servicesPath, nil).Want(http.StatusOK); string(r.Body) != "[]" {
			t.Fatalf("empty list: %s", r.Body)
		}
		// '-' sorts before digits and letters byte-wise; a collation that
		// ignores punctuation would put a-c after ab.
		for i, name := range []string{"b", "a9z", "ab", "a-c", "zz", "a0"} {
			if i%2 == 0 {
				createService(t, p.remote, map[string]any{"name": name, "type": "external", "resource": name + ".example.com", "targetPort": 80 + i})
			} else {
				createServiceYAML(t, p.remote, fmt.Sprintf("kind: Service\nmetadata:\n  name: %s\n  tags: [%s]\nspec:\n  type: agent\n  resource: plant-a\n  targetPort: %d\n", name, name, 80+i))
			}
		}
		list := listServices(t, p.remote)
		var names []string
		for _, s := range list {
			names = append(names, s.Name)
			if !sameService(s, getService(t, p.remote, s.Name)) {
				t.Fatalf("list shows %s as %+v, GET differently", s.Name, s)
			}
		}
		if want := []string{"a-c", "a0", "a9z", "ab", "b", "zz"}; !slices.Equal(names, want) {
			t.Fatalf("list order %v, want %v", names, want)
		}
	})
}

// setStatus records a reconcile outcome as the workflow would.
func setStatus(t *testing.T, st *store.Store, name string, gen int64, status string, reason, endpoint *string) {
	t.Helper()
	err := st.InTx(context.Background(), func(tx *store.Tx) error {
		ok, err := tx.SetServiceStatus(context.Background(), name, store.PassResult{Generation: gen, Status: status, Reason: reason, Endpoint: endpoint})
		if err == nil && !ok {
			err = fmt.Errorf("generation %d is not current", gen)
		}
		return err
	})
	if err != nil {
		t.Fatalf("set status of %s: %v", name, err)
	}
}

// patchService sends a JSON PATCH and checks the bare 204.
func patchService(t *testing.T, a *testAPI, name string, body any) {
	t.Helper()
	r := a.JSON(http.MethodPatch, servicesPath+"/"+name, body).Want(http.StatusNoContent)
	if len(r.Body) != 0 {
		t.Fatalf("PATCH %s answered a body: %s", name, r.Body)
	}
}

// TestServiceJSONPatchKeepsOmittedFields: a JSON PATCH changes only the
// fields it carries, restarts provisioning (pending, new generation), keeps
// bridgePort, and ignores what svcbridge assigns; immutables may be
// repeated unchanged, the bridge by name or uuid.
func TestServiceJSONPatchKeepsOmittedFields(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.remote)
		tags := []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}
		created := createService(t, p.remote, map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080, "tags": tags})
		want := created
		// The workflow finished generation 1, badly.
		setStatus(t, p.st, "checkout", 1, service.StatusFailed, strp("hub unreachable"), nil)
		p.rec.Reset()

		steps := []struct {
			name   string
			body   any
			change func(*serviceJSON) // nil: the PATCH changes nothing
		}{
			{"targetPort only", map[string]any{"targetPort": 8081}, func(s *serviceJSON) { s.TargetPort = 8081 }},
			{"tags only", map[string]any{"tags": []string{"checkout"}}, func(s *serviceJSON) { s.Tags = []string{"checkout"} }},
			{"no tags", map[string]any{"tags": []string{}}, func(s *serviceJSON) { s.Tags = []string{} }},
			{"resource by name", map[string]any{"resource": "orders/checkout-v2"}, func(s *serviceJSON) { s.Resource = f.checkoutV2.UUID }},
			{"resource by uuid", map[string]any{"resource": f.checkout.UUID}, func(s *serviceJSON) { s.Resource = f.checkout.UUID }},
			{"immutables repeated unchanged", map[string]any{"name": "checkout", "type": "microservice", "defaultBridge": "default-router"}, nil},
			{"empty object", map[string]any{}, nil},
			{"assigned fields ignored", map[string]any{"bridgePort": 5, "serviceEndpoint": "evil.example.com", "provisioningStatus": "ready",
				"provisioningError": "x", "generation": 99, "observedGeneration": 99, "reconcileRequest": 99, "observedReconcileRequest": 99, "servicePort": 80, "k8sType": "NodePort", "createdAt": "2000-01-01T00:00:00Z"},
				nil},
			{"tags again", map[string]any{"tags": []string{"x"}}, func(s *serviceJSON) { s.Tags = []string{"x"} }},
		}
		changes := 0
		for _, step := range steps {
			if step.change == nil {
				p.remote.JSON(http.MethodPatch, servicesPath+"/checkout", step.body).Want(http.StatusNoContent)
			} else {
				patchService(t, p.remote, "checkout", step.body)
				step.change(&want)
				changes++
			}
			got := getService(t, p.remote, "checkout")
			want.Generation = int64(changes + 1)
			wantSpec(t, got, want)
			if got.ProvisioningStatus != service.StatusPending || got.ProvisioningError != nil || got.ObservedGeneration != 1 ||
				!got.CreatedAt.Equal(created.CreatedAt) || got.UpdatedAt.Before(want.UpdatedAt) || got.Generation != want.Generation {
				t.Fatalf("%s: status %q error %v generation %d/%d createdAt %v updatedAt %v",
					step.name, got.ProvisioningStatus, deref(got.ProvisioningError), got.Generation, got.ObservedGeneration, got.CreatedAt, got.UpdatedAt)
			}
			want.UpdatedAt = got.UpdatedAt
		}
		if got := p.rec.Services(); len(got) != changes || slices.ContainsFunc(got, func(n string) bool { return n != "checkout" }) {
			t.Fatalf("reconciles %v, want one per PATCH that changes the service", got)
		}

		// A custom bridge is stored as a uuid and may be repeated by name.
		ssh := createService(t, p.remote, map[string]any{"name": "ssh", "type": "agent", "resource": "plant-a", "targetPort": 22, "defaultBridge": "core"})
		patchService(t, p.remote, "ssh", map[string]any{"defaultBridge": "core", "targetPort": 2222})
		patchService(t, p.remote, "ssh", map[string]any{"defaultBridge": f.core.UUID, "resource": f.plantA.UUID, "targetPort": 22})
		patchService(t, p.remote, "ssh", map[string]any{"targetPort": 2222})
		ssh.TargetPort = 2222
		wantSpec(t, getService(t, p.remote, "ssh"), ssh)
	})
}

// TestServiceUpdateThatChangesNothing (issue 37): an empty PATCH, one of
// only what is stored (by name or uuid) and a YAML document of the stored
// service answer 200 with the service as it is: no new generation, no
// event, no reconcile, a settled status kept. A dry run of one alike.
func TestServiceUpdateThatChangesNothing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.remote)
		createServiceYAML(t, p.remote, seedRemote)
		setStatus(t, p.st, "checkout", 1, service.StatusReady, nil, strp("hub.example.com"))
		want := getService(t, p.remote, "checkout")
		p.rec.Reset()
		events := func() string {
			return string(p.remote.Do(http.MethodGet, servicesPath+"/checkout/events", nil).Want(http.StatusOK).Body)
		}
		before := events()

		// A dry run of it answers the service as it is, as a GET does.
		r := p.remote.JSON(http.MethodPatch, servicesPath+"/checkout?dryRun=true", `{}`).Want(http.StatusOK)
		if _, ok := r.Map()["distribution"]; !ok {
			t.Errorf("%s answered no distribution: %s", r.req, r.Body)
		}
		if got := decodeService(t, r, "distribution"); got.Generation != 1 || got.ProvisioningStatus != service.StatusReady || !got.UpdatedAt.Equal(want.UpdatedAt) {
			t.Fatalf("%s answered generation %d, status %q; want the service as it was: %s", r.req, got.Generation, got.ProvisioningStatus, r.Body)
		}
		// Each answers 204 as every PATCH does, and writes nothing.
		for _, send := range []func() *testResponse{
			func() *testResponse { return p.remote.JSON(http.MethodPatch, servicesPath+"/checkout", `{}`) },
			func() *testResponse {
				return p.remote.JSON(http.MethodPatch, servicesPath+"/checkout", map[string]any{"resource": "orders/checkout", "tags": []string{"checkout"}, "targetPort": 8080})
			},
			func() *testResponse {
				return p.remote.JSON(http.MethodPatch, servicesPath+"/checkout", map[string]any{"resource": f.checkout.UUID, "defaultBridge": "default-router"})
			},
			func() *testResponse {
				return p.remote.Upload(http.MethodPatch, servicesPath+"/yaml/checkout", "service", seedRemote)
			},
		} {
			r := send().Want(http.StatusNoContent)
			if now := getService(t, p.remote, "checkout"); now.Generation != 1 || now.ProvisioningStatus != service.StatusReady || !now.UpdatedAt.Equal(want.UpdatedAt) {
				t.Fatalf("after %s: generation %d, status %q", r.req, now.Generation, now.ProvisioningStatus)
			}
		}
		if n := p.rec.Calls(); n != 0 {
			t.Fatalf("updates that change nothing triggered %d reconciles", n)
		}
		if after := events(); after != before {
			t.Fatalf("updates that change nothing recorded events:\nbefore %s\nafter  %s", before, after)
		}
		// A change is still one.
		patchService(t, p.remote, "checkout", map[string]any{"targetPort": 8081})
		wantPending(t, getService(t, p.remote, "checkout"), 2, 1)
	})
}

// TestServiceKubernetesJSONPatch: on Kubernetes a partial PATCH keeps
// servicePort and k8sType, and the serviceEndpoint Kubernetes reported
// stays until the next reconcile replaces it; a client's is ignored.
func TestServiceKubernetesJSONPatch(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.kube)
		want := createService(t, p.kube, map[string]any{"name": "lb", "type": "external", "resource": "vendor.example.com", "targetPort": 443,
			"servicePort": 443, "k8sType": "LoadBalancer", "tags": []string{"example.com/owner: team-a"}})
		setStatus(t, p.st, "lb", 1, service.StatusReady, nil, strp("198.51.100.7"))
		want.ServiceEndpoint = strp("198.51.100.7")

		patchService(t, p.kube, "lb", map[string]any{"targetPort": 8443, "serviceEndpoint": "evil.example.com"})
		want.TargetPort = 8443
		wantSpec(t, getService(t, p.kube, "lb"), want)

		patchService(t, p.kube, "lb", map[string]any{"k8sType": "ClusterIP", "servicePort": 8443, "tags": []string{"example.com/owner: team-b", "plain"}})
		want.K8sType, want.ServicePort, want.Tags = strp("ClusterIP"), intp(8443), []string{"example.com/owner: team-b", "plain"}
		got := getService(t, p.kube, "lb")
		wantSpec(t, got, want)
		wantPending(t, got, 3, 1)
	})
}

// TestServiceKubernetesOptions: spec.kubernetes is stored and shown as
// given; a JSON PATCH changes the options it names (null removes one), the
// YAML PATCH replaces the block, and every write starts a reconcile.
func TestServiceKubernetesOptions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.kube)
		want := createService(t, p.kube, map[string]any{"name": "lb", "type": "external", "resource": "vendor.example.com", "targetPort": 443,
			"servicePort": 443, "k8sType": "LoadBalancer", "kubernetes": map[string]any{
				"loadBalancerSourceRanges": []string{"10.0.0.0/8"}, "externalTrafficPolicy": "Local",
				"loadBalancerClass": "example.com/internal", "labels": map[string]string{"team": "a"}}})
		opts := &service.Kubernetes{LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, ExternalTrafficPolicy: "Local",
			LoadBalancerClass: strp("example.com/internal"), Labels: map[string]string{"team": "a"}}
		if !reflect.DeepEqual(want.Kubernetes, opts) {
			t.Fatalf("created kubernetes = %+v, want %+v", want.Kubernetes, opts)
		}
		wantSpec(t, getService(t, p.kube, "lb"), want)

		patchService(t, p.kube, "lb", map[string]any{"kubernetes": map[string]any{
			"externalTrafficPolicy": nil, "loadBalancerSourceRanges": []string{"10.0.0.0/8", "192.0.2.0/24"},
			"sessionAffinity": "ClientIP"}})
		want.Kubernetes = &service.Kubernetes{LoadBalancerSourceRanges: []string{"10.0.0.0/8", "192.0.2.0/24"},
			LoadBalancerClass: strp("example.com/internal"), SessionAffinity: "ClientIP", Labels: map[string]string{"team": "a"}}
		wantSpec(t, getService(t, p.kube, "lb"), want)

		// The YAML document has no class and another type: the block is replaced.
		p.kube.Upload(http.MethodPatch, servicesPath+"/yaml/lb", "service", "kind: Service\nmetadata:\n  name: lb\nspec:\n"+
			"  type: external\n  resource: vendor.example.com\n  targetPort: 443\n  servicePort: 443\n  k8sType: NodePort\n"+
			"  kubernetes:\n    externalTrafficPolicy: Local\n").Want(http.StatusNoContent)
		want.K8sType, want.Kubernetes = strp("NodePort"), &service.Kubernetes{ExternalTrafficPolicy: "Local"}
		wantSpec(t, getService(t, p.kube, "lb"), want)

		patchService(t, p.kube, "lb", map[string]any{"kubernetes": nil})
		want.Kubernetes = nil
		wantSpec(t, getService(t, p.kube, "lb"), want)
		if got := p.rec.Services(); !slices.Equal(got, []string{"lb", "lb", "lb", "lb"}) {
			t.Fatalf("reconciles %v", got)
		}
	})
}

// TestServiceYAMLPatchReplacesTheDocument: the YAML PATCH is the whole
// desired document: an omitted metadata.tags means no tags, fields the API
// returns (bridgePort, ...) are ignored, apiVersion is
// not read, and a custom bridge may be named by name.
func TestServiceYAMLPatchReplacesTheDocument(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.remote)
		want := createServiceYAML(t, p.remote, seedRemote)
		p.rec.Reset()

		upload := func(name, doc string) {
			t.Helper()
			r := p.remote.Upload(http.MethodPatch, servicesPath+"/yaml/"+name, "service", doc).Want(http.StatusNoContent)
			if len(r.Body) != 0 {
				t.Fatalf("YAML PATCH %s answered a body: %s", name, r.Body)
			}
		}
		upload("checkout", `apiVersion: nonsense/v0
kind: Service
metadata:
  name: checkout
spec:
  type: microservice
  resource: orders/checkout-v2
  targetPort: 9090
  bridgePort: 1
  serviceEndpoint: evil.example.com
  provisioningStatus: ready
`)
		want.Tags, want.Resource, want.TargetPort = []string{}, f.checkoutV2.UUID, 9090
		got := getService(t, p.remote, "checkout")
		wantSpec(t, got, want)
		wantPending(t, got, 2, 0)

		upload("checkout", "kind: Service\nmetadata:\n  name: checkout\n  tags: [checkout, extra]\nspec:\n  type: microservice\n  resource: "+f.checkout.UUID+"\n  targetPort: 8080\n")
		want.Tags, want.Resource, want.TargetPort = []string{"checkout", "extra"}, f.checkout.UUID, 8080
		wantSpec(t, getService(t, p.remote, "checkout"), want)

		ssh := createService(t, p.remote, map[string]any{"name": "ssh", "type": "agent", "resource": "plant-a", "targetPort": 22, "defaultBridge": "core", "tags": []string{"ssh"}})
		upload("ssh", "kind: Service\nmetadata:\n  name: ssh\nspec:\n  type: agent\n  resource: plant-a\n  targetPort: 2222\n  defaultBridge: core\n")
		ssh.Tags, ssh.TargetPort = []string{}, 2222
		wantSpec(t, getService(t, p.remote, "ssh"), ssh)

		if got := p.rec.Services(); !slices.Equal(got, []string{"checkout", "checkout", "ssh", "ssh"}) {
			t.Fatalf("reconciles %v", got)
		}
	})
}

// TestServiceDeleteFreesNameAndPort: DELETE answers a bare 204, the
// service is gone everywhere, its reconcile removes the router objects, and
// its name and bridgePort can be used again.
func TestServiceDeleteFreesNameAndPort(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.remote)
		ext := func(name string) map[string]any {
			return map[string]any{"name": name, "type": "external", "resource": "vendor.example.com", "targetPort": 443}
		}
		if a := createService(t, p.remote, ext("a")); a.BridgePort != 10024 {
			t.Fatalf("a got port %d", a.BridgePort)
		}
		createService(t, p.remote, ext("b"))
		p.rec.Reset()

		r := p.remote.Do(http.MethodDelete, servicesPath+"/a", nil).Want(http.StatusNoContent)
		if len(r.Body) != 0 {
			t.Fatalf("DELETE answered a body: %s", r.Body)
		}
		if got := p.rec.Services(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("reconciles %v, want [a]", got)
		}
		p.remote.Do(http.MethodGet, servicesPath+"/a", nil).WantError(404, "NotFoundError", "Service with name a not found")
		p.remote.Do(http.MethodDelete, servicesPath+"/a", nil).WantError(404, "NotFoundError", "Service with name a not found")
		if l := listServices(t, p.remote); len(l) != 1 || l[0].Name != "b" {
			t.Fatalf("list after delete: %+v", l)
		}
		if c := createService(t, p.remote, ext("c")); c.BridgePort != 10024 {
			t.Fatalf("c got port %d, want the freed 10024", c.BridgePort)
		}
		again := createService(t, p.remote, ext("a"))
		if again.BridgePort != 10026 {
			t.Fatalf("a again got port %d, want 10026", again.BridgePort)
		}
		wantPending(t, again, 1, 0)
	})
}

// TestServiceReconcile: POST .../reconcile answers 202 with the workflow
// and the request's number, and stores nothing but that count (not even
// updatedAt); when Temporal cannot be reached it says so (503), while
// writes still succeed and leave the reconcile to the resync.
func TestServiceReconcile(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.remote)
		createService(t, p.remote, map[string]any{"name": "vendor", "type": "external", "resource": "vendor.example.com", "targetPort": 443})
		p.rec.Reset()
		before := snapshot(t, p.st)

		for n := 1; n <= 2; n++ {
			r := p.remote.Do(http.MethodPost, servicesPath+"/vendor/reconcile", nil).Want(http.StatusAccepted)
			want := map[string]any{"name": "vendor", "workflowId": testIDs.Service("vendor"), "reconcileRequest": float64(n)}
			if got := r.Map(); !reflect.DeepEqual(got, want) {
				t.Fatalf("reconcile answered %v, want %v", got, want)
			}
		}
		if got := p.rec.Services(); !slices.Equal(got, []string{"vendor", "vendor"}) {
			t.Fatalf("reconciles %v", got)
		}
		counted := strings.Replace(before, `"reconcileRequest":0`, `"reconcileRequest":2`, 1)
		if after := snapshot(t, p.st); after != counted || counted == before {
			t.Fatalf("reconcile changed more than its count:\nbefore %s\nafter  %s", before, after)
		}

		p.rec.FailWith(fmt.Errorf("connection refused"))
		p.remote.Do(http.MethodPost, servicesPath+"/vendor/reconcile", nil).
			WantError(http.StatusServiceUnavailable, "UnavailableError", "Could not reach Temporal to start the reconcile: connection refused")
		createService(t, p.remote, map[string]any{"name": "late", "type": "external", "resource": "late.example.com", "targetPort": 443})
		patchService(t, p.remote, "late", map[string]any{"targetPort": 444})
		p.remote.Do(http.MethodDelete, servicesPath+"/vendor", nil).Want(http.StatusNoContent)
		if l := listServices(t, p.remote); len(l) != 1 || l[0].Name != "late" || l[0].TargetPort != 444 {
			t.Fatalf("list: %+v", l)
		}
	})
}

// TestServiceCreateRace: parallel creates of one name store one service
// (one 201, the others 409); parallel creates of different names all
// succeed with distinct bridge ports.
func TestServiceCreateRace(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.remote)
		p.rec.Reset()
		const n = 8
		post := func(body func(i int) string) []*testResponse { return p.remote.PostAtOnce(servicesPath, n, body) }

		created := 0
		for _, r := range post(func(i int) string {
			return fmt.Sprintf(`{"name":"twin","type":"external","resource":"v%d.example.com","targetPort":%d}`, i, 1000+i)
		}) {
			if r.Status == http.StatusCreated {
				created++
				continue
			}
			r.WantError(http.StatusConflict, "DuplicatePropertyError", "Service with name twin already exists")
		}
		if created != 1 {
			t.Fatalf("%d creates of twin succeeded, want 1", created)
		}
		if got := p.rec.Services(); !slices.Equal(got, []string{"twin"}) {
			t.Fatalf("reconciles %v, want one for twin", got)
		}

		ports := map[int]bool{}
		for _, r := range post(func(i int) string {
			return fmt.Sprintf(`{"name":"svc-%d","type":"external","resource":"vendor.example.com","targetPort":443}`, i)
		}) {
			s := decodeService(t, r.Want(http.StatusCreated))
			ports[s.BridgePort] = true
		}
		if l := listServices(t, p.remote); len(l) != n+1 || len(ports) != n {
			t.Fatalf("%d services stored, %d distinct ports; want %d and %d", len(l), len(ports), n+1, n)
		}
	})
}

// TestServiceNeedsADefaultRouterOnRemote: without a hub the remote control
// plane cannot place a default-router service (400, nothing stored), but a
// custom bridge is its own hub; Kubernetes needs no default router.
func TestServiceNeedsADefaultRouterOnRemote(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		createAgent(t, p.remote, map[string]any{"name": "core", "host": "core.example.com", "routerMode": "interior"})
		createAgent(t, p.remote, map[string]any{"name": "plant", "upstreamRouters": []string{"core"}})
		p.rec.Reset()
		before := snapshot(t, p.st)
		for _, body := range []map[string]any{
			{"name": "vendor", "type": "external", "resource": "vendor.example.com", "targetPort": 443},
			{"name": "ssh", "type": "agent", "resource": "plant", "targetPort": 22},
		} {
			p.remote.JSON(http.MethodPost, servicesPath, body).
				WantError(400, "ValidationError", "Default router not found: set defaultRouter on one interior agent")
		}
		if after := snapshot(t, p.st); after != before || p.rec.Calls() != 0 {
			t.Fatalf("a refused create changed the store or triggered a reconcile:\nbefore %s\nafter  %s", before, after)
		}
		ssh := createService(t, p.remote, map[string]any{"name": "ssh", "type": "agent", "resource": "plant", "targetPort": 22, "defaultBridge": "core"})
		if deref(ssh.ServiceEndpoint) != "core.example.com" {
			t.Fatalf("ssh endpoint %v, want the bridge's host", deref(ssh.ServiceEndpoint))
		}
		createService(t, p.kube, map[string]any{"name": "vendor", "type": "external", "resource": "vendor.example.com", "targetPort": 443, "servicePort": 443, "k8sType": "ClusterIP"})
		createService(t, p.kube, map[string]any{"name": "payments", "type": "k8s", "resource": "payments.payments.svc.cluster.local", "targetPort": 8080})
	})
}

// TestServiceBridgePortsRunOut: when BRIDGE_PORTS_RANGE is used up a create
// answers 409 naming the range and stores nothing; a delete frees a port.
func TestServiceBridgePortsRunOut(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect, func(o *Options) {
			o.BridgePorts, o.BridgePortsRaw = store.PortRange{First: 20000, Last: 20001}, "20000-20001"
		})
		newInventory(t, p.remote)
		ext := func(name string) map[string]any {
			return map[string]any{"name": name, "type": "external", "resource": "vendor.example.com", "targetPort": 443}
		}
		createService(t, p.remote, ext("a"))
		createService(t, p.kube, map[string]any{"name": "b", "type": "k8s", "resource": "b.default.svc", "targetPort": 80})
		p.rec.Reset()
		before := snapshot(t, p.st)
		p.remote.JSON(http.MethodPost, servicesPath, ext("c")).
			WantError(http.StatusConflict, "ConflictError", "No bridge port available in range for 20000-20001")
		if after := snapshot(t, p.st); after != before || p.rec.Calls() != 0 {
			t.Fatalf("the refused create changed the store or triggered a reconcile:\nbefore %s\nafter  %s", before, after)
		}
		p.remote.Do(http.MethodDelete, servicesPath+"/a", nil).Want(http.StatusNoContent)
		if c := createService(t, p.remote, ext("c")); c.BridgePort != 20000 {
			t.Fatalf("c got port %d, want 20000", c.BridgePort)
		}
	})
}

// TestServiceBodyLimit: a JSON body of exactly MaxBody bytes is read; one
// byte more is 413.
func TestServiceBodyLimit(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.remote)
		body := []byte(`{"name":"vendor","type":"external","resource":"vendor.example.com","targetPort":443}`)
		padded := append(body, bytes.Repeat([]byte(" "), MaxBody-len(body))...)
		p.remote.JSON(http.MethodPost, servicesPath, append(slices.Clone(padded), ' ')).
			WantError(http.StatusRequestEntityTooLarge, "PayloadTooLargeError", msgTooLarge)
		createService(t, p.remote, padded)
		patchService(t, p.remote, "vendor", append([]byte(`{"targetPort":444}`), bytes.Repeat([]byte("\n"), MaxBody-18)...))
	})
}

// hangingReconciler holds ServiceChanged (and ServiceCreated) until
// released or until its context ends, and reports which came first.
type hangingReconciler struct {
	recordingReconciler
	entered  chan struct{}
	release  chan struct{}
	canceled chan error
}

func (h *hangingReconciler) ServiceChanged(ctx context.Context, name string) error {
	h.entered <- struct{}{}
	var ended error
	select {
	case <-ctx.Done():
		ended = ctx.Err()
	case <-h.release:
	}
	// Recorded before it reports: the test reads the calls once told.
	err := h.recordingReconciler.ServiceChanged(ctx, name)
	h.canceled <- ended
	return err
}

func (h *hangingReconciler) ServiceCreated(ctx context.Context, name string) error {
	return h.ServiceChanged(ctx, name)
}

// TestServiceReconcileTriggerOutlivesTheClient: the change is committed
// before the workflow is started, so a client that hangs up meanwhile must
// not cancel the start.
func TestServiceReconcileTriggerOutlivesTheClient(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		h := &hangingReconciler{entered: make(chan struct{}), release: make(chan struct{}, 1), canceled: make(chan error, 1)}
		api, _, _ := newTestAPI(t, dialect, func(o *Options) { o.Reconciler = h })
		// Inventory writes only reconcile agents; the hub is all we need.
		createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		for _, tc := range []struct{ method, path, body string }{
			{http.MethodPost, servicesPath, `{"name":"vendor","type":"external","resource":"vendor.example.com","targetPort":443}`},
			{http.MethodPatch, servicesPath + "/vendor", `{"targetPort":444}`},
			{http.MethodDelete, servicesPath + "/vendor", ``},
		} {
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, tc.method, api.URL()+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			done := make(chan error, 1)
			go func() {
				resp, err := api.srv.Client().Do(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			<-h.entered
			cancel() // the client hangs up while the workflow is being started
			if err := <-done; err == nil {
				t.Fatalf("%s %s: the request did not fail on cancel", tc.method, tc.path)
			}
			select {
			case err := <-h.canceled:
				t.Fatalf("%s %s: the reconcile trigger was cancelled with the request: %v", tc.method, tc.path, err)
			case <-time.After(300 * time.Millisecond): // the server has long seen the hang-up
			}
			h.release <- struct{}{}
			if err := <-h.canceled; err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
		}
		if got := h.Services(); !slices.Equal(got, []string{"vendor", "vendor", "vendor"}) {
			t.Fatalf("reconciles %v", got)
		}
	})
}

// A service says where its workflow is, so that no client guesses the
// Web UI or the namespace.
func TestServicesLinkTheirWorkflow(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) {
		o.Namespace, o.WebUI = "ops", "http://ui.example:9999"
	})
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
	created := api.JSON("POST", "/api/v3/services", map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.1", "targetPort": 443}).Want(201).Map()
	want := "http://ui.example:9999/namespaces/ops/workflows/" + url.PathEscape(testIDs.Service("vendor"))
	for _, got := range []map[string]any{created, api.Do("GET", "/api/v3/services/vendor", nil).Want(200).Map()} {
		if got["workflowNamespace"] != "ops" || got["workflowUrl"] != want {
			t.Errorf("service answers namespace %v, link %v; want ops, %s", got["workflowNamespace"], got["workflowUrl"], want)
		}
	}
	// What GET answers may be sent back.
	api.JSON("PATCH", "/api/v3/services/vendor", map[string]any{"targetPort": 444, "workflowId": created["workflowId"],
		"workflowNamespace": created["workflowNamespace"], "workflowUrl": created["workflowUrl"]}).Want(204)
	for _, c := range []struct{ ui, ns, id, want string }{
		{"", "default", "svcbridge/service/a", ""},
		{"http://ui", "", "svcbridge/service/a", ""},
		{"http://ui", "team a", "svcbridge/service/a b", "http://ui/namespaces/team%20a/workflows/svcbridge%2Fservice%2Fa%20b"},
	} {
		if got := workflowURL(c.ui, c.ns, c.id); got != c.want {
			t.Errorf("workflowURL(%q, %q, %q) = %q, want %q", c.ui, c.ns, c.id, got, c.want)
		}
	}
}

// TestServiceCreateOnARequestedBridgePort: ?bridgePort= gives the new
// service that port when it is in the range and free; a port outside the
// range is a 400 and a held one a 409, each naming the port and storing
// nothing. Of parallel creates asking for one port at most one gets it,
// and creates that allocate beside them all succeed.
func TestServiceCreateOnARequestedBridgePort(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect, func(o *Options) {
			o.BridgePorts, o.BridgePortsRaw = store.PortRange{First: 20000, Last: 20099}, "20000-20099"
		})
		newInventory(t, p.remote)
		ext := func(name string) map[string]any {
			return map[string]any{"name": name, "type": "external", "resource": "vendor.example.com", "targetPort": 443}
		}
		if s := decodeService(t, p.remote.JSON(http.MethodPost, servicesPath+"?bridgePort=20050", ext("a")).Want(http.StatusCreated)); s.BridgePort != 20050 {
			t.Fatalf("a got port %d, want the requested 20050", s.BridgePort)
		}
		if s := createService(t, p.remote, ext("b")); s.BridgePort != 20000 {
			t.Fatalf("b got port %d, want the first free 20000", s.BridgePort)
		}
		doc := "kind: Service\nmetadata:\n  name: y\nspec:\n  type: external\n  resource: y.example.com\n  targetPort: 443\n"
		if s := decodeService(t, p.remote.Upload(http.MethodPost, servicesPath+"/yaml?bridgePort=20051", "service", doc).Want(http.StatusCreated)); s.BridgePort != 20051 {
			t.Fatalf("y got port %d, want the requested 20051", s.BridgePort)
		}

		p.rec.Reset()
		before := snapshot(t, p.st)
		p.remote.JSON(http.MethodPost, servicesPath+"?bridgePort=20050", ext("c")).
			WantError(http.StatusConflict, "ConflictError", "Requested bridgePort 20050 is taken by service a")
		p.remote.JSON(http.MethodPost, servicesPath+"?bridgePort=10024", ext("c")).
			WantError(http.StatusBadRequest, "ValidationError", "Requested bridgePort 10024 is outside the bridge port range 20000-20099")
		p.remote.JSON(http.MethodPost, servicesPath+"?bridgePort=x", ext("c")).
			WantError(http.StatusBadRequest, "ValidationError", `Query parameter 'bridgePort' must be an integer, not "x"`)
		p.remote.JSON(http.MethodPost, servicesPath+"?bridgePort=20060&dryRun=true", ext("c")).Want(http.StatusCreated)
		if after := snapshot(t, p.st); after != before || p.rec.Calls() != 0 {
			t.Fatalf("refused creates changed the store or triggered a reconcile:\nbefore %s\nafter  %s", before, after)
		}

		const n = 6
		var asked, allocated []*testResponse
		var wg sync.WaitGroup
		wg.Go(func() {
			asked = p.remote.PostAtOnce(servicesPath+"?bridgePort=20001", n, func(i int) string {
				return fmt.Sprintf(`{"name":"asked-%d","type":"external","resource":"v.example.com","targetPort":443}`, i)
			})
		})
		wg.Go(func() {
			allocated = p.remote.PostAtOnce(servicesPath, n, func(i int) string {
				return fmt.Sprintf(`{"name":"free-%d","type":"external","resource":"v.example.com","targetPort":443}`, i)
			})
		})
		wg.Wait()
		won := 0
		for _, r := range asked {
			if r.Status == http.StatusCreated {
				won++
				continue
			}
			r.Want(http.StatusConflict)
			if msg := r.Map()["message"]; !strings.HasPrefix(fmt.Sprint(msg), "Requested bridgePort 20001 is taken by ") {
				t.Fatalf("a losing request answered %v", msg)
			}
		}
		for _, r := range allocated {
			decodeService(t, r.Want(http.StatusCreated))
		}
		ports := map[int]string{}
		for _, s := range listServices(t, p.remote) {
			if other, dup := ports[s.BridgePort]; dup {
				t.Fatalf("services %s and %s share bridge port %d", other, s.Name, s.BridgePort)
			}
			ports[s.BridgePort] = s.Name
		}
		// An allocation may commit 20001 before any claim: then every
		// claim loses to it.
		if holder := ports[20001]; won != 1 && !strings.HasPrefix(holder, "free-") || won == 1 && !strings.HasPrefix(holder, "asked-") {
			t.Fatalf("%d creates asking for 20001 succeeded; it is held by %q", won, holder)
		}
	})
}
