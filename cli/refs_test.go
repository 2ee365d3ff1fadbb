package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"svcbridge/wire"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestCLIRefsTakeKindThenNamesOrKindSlashName(t *testing.T) {
	for _, c := range []struct {
		args []string
		kind string
		want string // refs joined by spaces; "error" for an error
	}{
		{[]string{"services"}, "services", ""},
		{[]string{"svc", "a", "b"}, "services", "service/a service/b"},
		{[]string{"service/a", "agent/hub"}, "", "service/a agent/hub"},
		{[]string{"ms", "orders/checkout"}, "microservices", "microservice/orders/checkout"},
		{[]string{"microservice/orders/checkout"}, "", "microservice/orders/checkout"},
		// After a kind, that kind's prefix (as xargs passes -o name lines).
		{[]string{"service", "service/a"}, "services", "service/a"},
		{[]string{"ms", "microservice/orders/checkout"}, "microservices", "microservice/orders/checkout"},
		// An application named like a kind is still an application.
		{[]string{"ms", "service/x"}, "microservices", "microservice/service/x"},
		{[]string{"ms", "microservice/x"}, "microservices", "microservice/microservice/x"},
		{[]string{"widgets"}, "", "error"},
		{[]string{"widget/a"}, "", "error"},
		{[]string{"microservice/x"}, "", "error"},
		{[]string{"service/"}, "", "error"},
	} {
		kind, refs, err := parseRefs(c.args)
		got := []string{}
		for _, r := range refs {
			got = append(got, r.String())
		}
		if err != nil {
			got = []string{"error"}
			if ExitCode(err) != ExitOther {
				t.Errorf("%v: exit %d", c.args, ExitCode(err))
			}
		}
		if strings.Join(got, " ") != c.want || kind != c.kind {
			t.Errorf("parseRefs(%q) = %q %q, want %q %q", c.args, kind, got, c.kind, c.want)
		}
	}
	if _, _, err := oneKind([]objectRef{{"services", "a"}, {"agents", "b"}}); err == nil {
		t.Errorf("oneKind of two kinds")
	}
	if names, err := serviceNames([]string{"a", "service/b"}); err != nil || strings.Join(names, ",") != "a,b" {
		t.Errorf("serviceNames: %q %v", names, err)
	}
	if _, err := serviceNames([]string{"agent/hub"}); err == nil {
		t.Errorf("serviceNames took an agent")
	}
}

// get -o yaml prints what apply reads back: the API object under
// metadata, spec and status, in a kind: List; apply drops status.
func TestCLIDocumentsRoundTripThroughApply(t *testing.T) {
	svc := []byte(`{"name":"checkout","tags":["checkout"],"type":"microservice","resource":"u-ms","targetPort":8080,"defaultBridge":"default-router","servicePort":10024,"k8sType":null,"bridgePort":10024,"provisioningStatus":"ready","workflowId":"service/checkout","future":1}`)
	agent := []byte(`{"uuid":"u-a","name":"fog-a","host":"","routerMode":"edge","defaultRouter":false,"tags":[],"upstreamRouters":["u-hub"],"createdAt":"2026-01-01T00:00:00Z"}`)
	ms := []byte(`{"uuid":"u-ms","application":"orders","name":"checkout","agent":"u-a","hostNetworkMode":false}`)
	var out bytes.Buffer
	if err := printDocuments(&out, "yaml", nil, []json.RawMessage{agent, ms, svc}, func(b []byte) ([]byte, error) {
		switch {
		case bytes.Equal(b, agent):
			return agentDocument(b)
		case bytes.Equal(b, ms):
			return microserviceDocument(b)
		}
		return serviceDocument(b)
	}); err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: iofog.org/v3
kind: List
items:
  - apiVersion: iofog.org/v3
    kind: Agent
    metadata:
      name: fog-a
      tags: []
    spec:
      host: ""
      routerMode: edge
      defaultRouter: false
      upstreamRouters:
        - u-hub
    status:
      uuid: u-a
      createdAt: "2026-01-01T00:00:00Z"
  - apiVersion: iofog.org/v3
    kind: Microservice
    metadata:
      name: orders/checkout
    spec:
      agent: u-a
      hostNetworkMode: false
    status:
      uuid: u-ms
  - apiVersion: iofog.org/v3
    kind: Service
    metadata:
      name: checkout
      tags:
        - checkout
    spec:
      type: microservice
      resource: u-ms
      targetPort: 8080
      defaultBridge: default-router
      servicePort: 10024
      k8sType: null
    status:
      bridgePort: 10024
      provisioningStatus: ready
      workflowId: service/checkout
      future: 1
`
	if out.String() != want {
		t.Errorf("get -o yaml:\n%s\nwant:\n%s", out.String(), want)
	}
	read, err := splitDocuments("list.yaml", out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 3 || read[0].ref() != "agent/fog-a" || read[1].ref() != "microservice/orders/checkout" || read[2].ref() != "service/checkout" ||
		read[2].where() != "list.yaml, document 1, item 3" {
		t.Fatalf("apply reads %+v", read)
	}
	var sent map[string]any
	if err := yaml.Unmarshal(read[2].body, &sent); err != nil || sent["status"] != nil || sent["spec"].(map[string]any)["targetPort"] != 8080 {
		t.Errorf("apply sends %v:\n%s", err, read[2].body)
	}
	if app, name, agent, _, err := microserviceFields(read[1]); err != nil || app+"/"+name+" "+agent != "orders/checkout u-a" {
		t.Errorf("microservice document: %s/%s %s %v", app, name, agent, err)
	}
	// One name: the document alone; JSON applies as YAML does.
	out.Reset()
	printDocuments(&out, "json", []string{"checkout"}, []json.RawMessage{svc}, serviceDocument)
	if read, err := splitDocuments("-", out.Bytes()); err != nil || len(read) != 1 || read[0].ref() != "service/checkout" || read[0].item != 0 {
		t.Errorf("-o json of one service reads back as %+v %v", read, err)
	}
	if _, err := splitDocuments("l.yaml", []byte("kind: List\nitems: 3\n")); err == nil {
		t.Errorf("a List without a list of items")
	}
}

// describe sums a large distribution up by state and lists the first
// agents; --all lists every one.
func TestCLIDescribeSumsUpALargeDistribution(t *testing.T) {
	var entries []string
	for i := range 25 {
		e := fmt.Sprintf(`{"agent":"u%02d","agentName":"a%02d","listening":true,"wanted":true,"reason":"t","writtenAt":"2026-01-01T00:00:00Z","rollout":"pending"`, i, i)
		switch i {
		case 0:
			e = strings.Replace(e, `"pending"`, `"acknowledged"`, 1) + `,"acknowledgedAt":"2026-01-01T00:00:01Z"`
		case 1:
			e = strings.Replace(e, `"listening":true`, `"listening":false`, 1)
			e = strings.Replace(e, `,"rollout":"pending"`, ``, 1)
		case 2:
			e = strings.Replace(e, `"wanted":true`, `"wanted":false`, 1)
		}
		entries = append(entries, e+"}")
	}
	svc := `{"name":"big","type":"external","resource":"203.0.113.1","targetPort":1,"provisioningStatus":"ready","distribution":[` + strings.Join(entries, ",") + `]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v3/services/big" {
			w.Write([]byte(svc))
			return
		}
		w.Write([]byte(`[]`))
	}))
	defer srv.Close()
	describe := func(args ...string) string {
		cmd := describeCmd(Options{Exit: func(int) {}})
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetArgs(append(args, "--server", srv.URL))
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	out := describe("service/big")
	if !strings.Contains(out, "Distribution:     23/25 agents listening\nBy state:         1 applied, 22 written (not applied yet), 0 failed on their router, 1 pending, 1 being removed\n") ||
		strings.Count(out, "\n  a") != describeAgents || !strings.Contains(out, "  ... and 5 more agents (--all lists them") {
		t.Errorf("describe of 25 agents:\n%s", out)
	}
	if out := describe("service", "big", "--all"); strings.Count(out, "\n  a") != 25 || strings.Contains(out, "more agents") {
		t.Errorf("describe --all:\n%s", out)
	}

	// Failed: its connector or hub listener is gone, so neither its
	// endpoint nor its agents' listeners carry traffic.
	svc = strings.Replace(svc, `"provisioningStatus":"ready"`, `"provisioningStatus":"failed","provisioningError":"Agent fog-a has routerMode none","serviceEndpoint":"hub.example.com"`, 1)
	if out := describe("service/big"); !strings.Contains(out, "Endpoint:         hub.example.com (not served)\n") ||
		!strings.Contains(out, "Distribution:     23/25 agents listening; no traffic until the service is ready again (it failed)\n") {
		t.Errorf("describe of a failed service:\n%s", out)
	}
}

// A watch that loses its stream opens it again and reports only what
// changed meanwhile: nothing twice, and what went as DELETED.
func TestCLIWatchResumesAfterAReconnect(t *testing.T) {
	streams := []string{
		`{"type":"ADDED","object":{"name":"a","targetPort":1}}
{"type":"ADDED","object":{"name":"b","targetPort":1}}
{"type":"BOOKMARK","object":{}}
{"type":"MODIFIED","object":{"name":"a","targetPort":2}}
`,
		`{"type":"ADDED","object":{"name":"a","targetPort":2}}
{"type":"ADDED","object":{"name":"c","targetPort":1}}
{"type":"BOOKMARK","object":{}}
`,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" || n >= len(streams) {
			cancel()
			http.Error(w, "done", 500)
			return
		}
		w.Header().Set("Content-Type", "application/jsonl; charset=utf-8")
		w.Write([]byte(streams[n]))
		n++
	}))
	defer srv.Close()
	var got []string
	err := (&Client{Server: srv.URL}).Watch(ctx, "/api/v3/services", watchKinds["services"].key, func(e WatchEvent) error {
		var s struct {
			Name       string `json:"name"`
			TargetPort int    `json:"targetPort"`
		}
		json.Unmarshal(e.Object, &s)
		got = append(got, fmt.Sprintf("%s %s%d", e.Type, s.Name, s.TargetPort))
		return nil
	})
	want := "ADDED a1, ADDED b1, BOOKMARK 0, MODIFIED a2, ADDED c1, DELETED b1"
	if err != nil || strings.Join(got, ", ") != want {
		t.Errorf("events %q (%v), want %q", strings.Join(got, ", "), err, want)
	}
	// fn's error ends the watch, as does a server never reached.
	n = 0
	stop := errors.New("stdout closed")
	if err := (&Client{Server: srv.URL}).Watch(context.Background(), "/api/v3/services", watchKinds["services"].key, func(WatchEvent) error { return stop }); err != stop {
		t.Errorf("fn's error: %v", err)
	}
	if err := (&Client{Server: "http://127.0.0.1:1"}).Watch(context.Background(), "/x", watchKinds["services"].key, nil); ExitCode(err) != ExitUnreachable {
		t.Errorf("no server: %v", err)
	}
	// A stream the server ends with an ERROR event ends the watch with its reason.
	dropped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jsonl; charset=utf-8")
		w.Write([]byte(`{"type":"BOOKMARK","object":{}}` + "\n" + `{"type":"ERROR","object":{"name":"TooSlowError","message":"The watch fell behind"}}` + "\n"))
	}))
	defer dropped.Close()
	err = (&Client{Server: dropped.URL}).Watch(context.Background(), "/api/v3/services", watchKinds["services"].key, func(WatchEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "The watch fell behind") {
		t.Errorf("a watch the server ended: %v", err)
	}
}

// --wait=rollout waits until every selected agent's router holds the
// listener (as its router side says, or the agent acknowledged), and ends
// at once, naming the agent and reason, when a router refused it.
func TestCLIRolloutWaitsForEveryAgent(t *testing.T) {
	ack := wire.Time(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	yes, no := true, false
	entry := func(name string, listening bool, wanted *bool, acked bool, rollout, reason string) DistributionEntry {
		e := DistributionEntry{AgentName: name, Listening: listening, Wanted: wanted, Rollout: rollout, RolloutReason: reason}
		if acked {
			e.AcknowledgedAt = &ack
		}
		return e
	}
	for _, c := range []struct {
		name    string
		entries []DistributionEntry
		done    bool
		waiting string // in the state, when not done
		refused string // in the error, when refused
	}{
		{"none", nil, true, "", ""},
		{"applied and acknowledged", []DistributionEntry{entry("a", true, &yes, true, "applied", ""), entry("b", true, &yes, true, "acknowledged", "")}, true, "", ""},
		{"written, not applied", []DistributionEntry{entry("a", true, &yes, true, "applied", ""), entry("b", true, &yes, false, "pending", "router unreachable: refused")}, false,
			"waiting for b (pending: router unreachable: refused)", ""},
		{"one pending", []DistributionEntry{entry("a", true, &yes, true, "applied", ""), entry("b", false, &yes, false, "", "")}, false, "waiting for b (listener not written yet)", ""},
		{"one still to remove", []DistributionEntry{entry("a", true, &yes, true, "applied", ""), entry("b", true, &no, true, "applied", "")}, false, "b (still to drop its listener)", ""},
		{"refused by a router", []DistributionEntry{entry("a", true, &yes, true, "failed", "Address already in use")}, false, "", "refused by the router of a: Address already in use"},
	} {
		s := Service{Service: wire.Service{Distribution: c.entries}}
		s.Name = "checkout"
		done, state, err := rolledOut(s)
		switch {
		case c.refused != "":
			var fe *FailedError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: %v, want a failure naming %q", c.name, err, c.refused)
			}
		case done != c.done || err != nil || !strings.Contains(state, c.waiting):
			t.Errorf("%s: rolled out %v %v, state %q; want %v, %q", c.name, done, err, state, c.done, c.waiting)
		}
	}
	var w waitFlags
	for _, c := range []struct {
		set           string
		allowed, ok   bool
		wait, rollout bool
	}{
		{"ready", true, true, true, false}, {"true", false, true, true, false}, {"rollout", true, true, true, true},
		{"rollout", false, false, false, false}, {"none", true, true, false, false}, {"soon", true, false, false, false},
	} {
		w = waitFlags{rolloutAllowed: c.allowed}
		err := (*waitValue)(&w).Set(c.set)
		if (err == nil) != c.ok || w.wait != c.wait || w.rollout != c.rollout {
			t.Errorf("--wait=%s (rollout allowed %v): %+v %v", c.set, c.allowed, w, err)
		}
	}
}

func TestCLIGetWithoutResourceNamesTheTypes(t *testing.T) {
	err := needResource("get")(nil, nil)
	if err == nil || !strings.Contains(err.Error(), "you must specify the type of resource to get: services (svc), agents (agent) or microservices (ms)") {
		t.Errorf("get without an argument: %v", err)
	}
	if err := needResource("get")(nil, []string{"svc"}); err != nil {
		t.Errorf("get svc: %v", err)
	}
}
