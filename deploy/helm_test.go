package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"svcbridge/config"
	"svcbridge/kube"
	"svcbridge/routerconfig"
)

const (
	chartDir = "helm/svcbridge"
	// kubeVersion is the cluster version the chart is rendered for (Chart.yaml
	// asks for 1.27 or later).
	kubeVersion = "v1.34.0"
)

// release is one `helm install` or `helm upgrade` of the chart.
type release struct {
	name, namespace string
	revision        int
	values          map[string]any // over values.yaml, as --values would be
}

func (r release) names() names {
	prefix := r.name
	if !strings.Contains(r.name, "svcbridge") {
		prefix += "-svcbridge"
	}
	return names{api: prefix + "-api", worker: prefix + "-worker",
		migrate: fmt.Sprintf("%s-migrate-%d", prefix, r.revision), configMap: prefix + "-config"}
}

// defaults is `helm install svcbridge` in the ioFog controller's namespace:
// the kustomization's objects.
var defaults = release{name: "svcbridge", namespace: "iofog", revision: 1}

// production is an upgrade with everything an operator turns on: mTLS and
// an API key to Temporal, OIDC with a client secret, a tokens file, another
// controller namespace, Ingresses, monitoring, more replicas.
var production = release{name: "edge", namespace: "svcbridge", revision: 4, values: map[string]any{
	"image": map[string]any{"repository": "registry.example.com/svcbridge", "tag": "1.4.2"},
	"config": map[string]any{
		"TEMPORAL_ADDRESS": "temporal.example.com:7233", "TEMPORAL_NAMESPACE": "edge", "TASK_QUEUE": "edge",
		"WORKFLOW_ID_PREFIX": "edge/", "TEMPORAL_TLS_SERVER_NAME": "temporal.example.com",
		"OIDC_CLIENT_ID": "svcbridge-cli", "DB_MAX_OPEN_CONNS": "5", "DB_MAX_IDLE_CONNS": "2",
		"DISTRIBUTION": "iofog", "LB_POLL_ATTEMPTS": "20", "HTTP_WRITE_TIMEOUT": "90s", "DRIFT_INTERVAL": "0",
	},
	"controllerNamespace": "iofog",
	"database":            map[string]any{"existingSecret": "edge-db", "key": "url"},
	"temporalTLS":         map[string]any{"existingSecret": "edge-temporal-tls", "clientCertificate": true, "ca": true},
	"temporalAPIKey":      map[string]any{"existingSecret": "edge-temporal", "key": "apiKey"},
	"oidcClientSecret":    map[string]any{"existingSecret": "edge-oidc", "key": "secret"},
	"authTokens":          map[string]any{"existingSecret": "edge-tokens", "key": "tokens.yaml"},
	"api":                 map[string]any{"replicas": 3, "port": 8443},
	"worker":              map[string]any{"replicas": 4, "metricsPort": 9464},
	"ingress": map[string]any{
		"api":    map[string]any{"enabled": true, "className": "nginx", "host": "svcbridge.example.com", "tlsSecretName": "svcbridge-tls"},
		"agents": map[string]any{"enabled": true, "className": "nginx", "host": "agents.example.com", "tlsSecretName": "agents-tls"},
	},
	"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"}},
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"},
			"runbookURL": productionRunbook},
		"grafanaDashboard": map[string]any{"enabled": true},
	},
}}

// productionRunbook is where the production release's team reads
// docs/runbook.md.
const productionRunbook = "https://git.example.org/ops/svcbridge/blob/v1.4.2/docs/runbook.md"

// secretsOf are the Secrets a release's values name, as the operator would
// have created them: checkEnv resolves secretKeyRefs from them.
func secretsOf(r release) []manifest {
	secret := func(name string, data map[string]string) manifest {
		return manifest{file: "(operator's Secret)", obj: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}}
	}
	if r.values == nil {
		return []manifest{secret("svcbridge-database", map[string]string{databaseEnv: "postgres://svcbridge:CHANGE-ME@db:5432/svcbridge"})}
	}
	return []manifest{
		secret("edge-db", map[string]string{"url": "postgres://svcbridge:CHANGE-ME@db:5432/svcbridge?sslmode=require"}),
		secret("edge-temporal", map[string]string{"apiKey": "an-api-key"}),
		secret("edge-oidc", map[string]string{"secret": "a-client-secret"}),
	}
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load %s: %v", chartDir, err)
	}
	return c
}

// renderValues merges r's values over the chart's and validates them
// against values.schema.json, as helm install does.
func renderValues(t *testing.T, c *chart.Chart, r release) (chartutil.Values, error) {
	t.Helper()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	return chartutil.ToRenderValues(c, r.values, chartutil.ReleaseOptions{
		Name: r.name, Namespace: r.namespace, Revision: r.revision, IsInstall: r.revision == 1, IsUpgrade: r.revision > 1,
	}, caps)
}

// rendered is what one release renders.
type rendered struct {
	objs []manifest
	// custom are the prometheus-operator objects, which client-go's scheme
	// does not know, by kind.
	custom map[string][]customObject
}

// customObject is a custom resource, decoded strictly but for its spec.
type customObject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            json.RawMessage   `json:"spec"`
}

// render renders the chart for r with Helm's engine and decodes every
// object strictly.
func render(t *testing.T, r release) rendered {
	t.Helper()
	return renderIn(t, r, nil)
}

// renderIn is render in a cluster whose objects the templates' lookup
// reads through cluster; nil is `helm template`'s (lookup finds nothing).
func renderIn(t *testing.T, r release, cluster engine.ClientProvider) rendered {
	t.Helper()
	files, err := renderFiles(t, r, cluster)
	if err != nil {
		t.Fatalf("render release %s: %v", r.name, err)
	}
	out := rendered{custom: map[string][]customObject{}}
	for _, file := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(file, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		for i, doc := range splitYAML(t, file, strings.NewReader(files[file])) {
			var tm metav1.TypeMeta
			if err := sigsyaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: document %d: %v", file, i+1, err)
			}
			if strings.HasPrefix(tm.APIVersion, "monitoring.coreos.com/") {
				var co customObject
				if err := sigsyaml.UnmarshalStrict(doc, &co); err != nil {
					t.Errorf("%s: document %d: %v", file, i+1, err)
				}
				out.custom[co.Kind] = append(out.custom[co.Kind], co)
				continue
			}
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s: document %d: %v\n%s", file, i+1, err, doc)
				continue
			}
			out.objs = append(out.objs, manifest{file: file, obj: obj})
		}
	}
	return out
}

// renderFiles renders the chart's templates for r, lookup reading cluster
// when not nil.
func renderFiles(t *testing.T, r release, cluster engine.ClientProvider) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	vals, err := renderValues(t, c, r)
	if err != nil {
		t.Fatalf("values of release %s: %v", r.name, err)
	}
	if cluster == nil {
		return engine.Render(c, vals)
	}
	return engine.RenderWithClientProvider(c, vals, cluster)
}

// TestChartLints runs helm lint (the SDK's lint package: the same rules)
// with the default and the production values.
func TestChartLints(t *testing.T) {
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []release{defaults, production, withHubRouter} {
		l := lint.AllWithKubeVersion(chartDir, r.values, r.namespace, kv)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint (release %s): %s", r.name, m)
			}
		}
	}
}

// TestChartObjects checks the rendered objects for what an operator relies
// on, as TestWorkloadsRunSafely and its neighbours do for the kustomization.
func TestChartObjects(t *testing.T) {
	for _, r := range []release{defaults, production} {
		t.Run(r.name, func(t *testing.T) {
			out := render(t, r)
			o := index(t, append(out.objs, secretsOf(r)...))
			n := r.names()
			checkWorkloadsSafe(t, o)
			image := checkRoles(t, o, n)
			checkAPI(t, o, n)
			checkWorker(t, o, n)
			checkEnv(t, o, r.namespace)
			if tag := image[strings.LastIndex(image, ":")+1:]; tag == "latest" || !strings.Contains(image, ":") {
				t.Errorf("image %s: pin a tag", image)
			}
			checkNamespaces(t, out.objs, r)
			if d := o.deployments[n.api]; d != nil && int(*d.Spec.Replicas) != replicas(r, "api") {
				t.Errorf("%s: replicas %d, want %d", n.api, *d.Spec.Replicas, replicas(r, "api"))
			}
		})
	}
}

// replicas is the role's replica count in r's values, or values.yaml's 2.
func replicas(r release, role string) int {
	values, _ := r.values[role].(map[string]any)
	if v, ok := values["replicas"].(int); ok {
		return v
	}
	return 2
}

// checkNamespaces: every object is in the release namespace (Helm's
// default for objects that name none) but the worker's Role and
// RoleBinding, which are in the controller namespace, binding the
// release's ServiceAccount.
func checkNamespaces(t *testing.T, objs []manifest, r release) {
	t.Helper()
	controller := r.namespace
	if ns, ok := r.values["controllerNamespace"].(string); ok && ns != "" {
		controller = ns
	}
	for _, m := range objs {
		meta, _ := m.obj.(metav1.Object)
		kind := m.obj.GetObjectKind().GroupVersionKind().Kind
		want := r.namespace
		if kind == "Role" || kind == "RoleBinding" {
			want = controller
		}
		// Helm puts an object that names no namespace in the release's.
		if got := meta.GetNamespace(); got != want && (got != "" || want != r.namespace) {
			t.Errorf("%s %s: namespace %q, want %q", kind, meta.GetName(), got, want)
		}
	}
	o := index(t, objs)
	for _, b := range o.bindings {
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace != r.namespace {
				t.Errorf("RoleBinding %s: subject %s in namespace %q, want the release's %s", b.Name, s.Name, s.Namespace, r.namespace)
			}
		}
	}
	if len(o.roles) == 0 || len(o.bindings) == 0 {
		t.Errorf("no Role or RoleBinding rendered")
	}
}

// TestChartMigrationHook: the migrate Job is a pre-install and pre-upgrade
// hook named per revision (a Job's template is immutable: a fixed name
// would refuse the next image), replacing the previous one.
func TestChartMigrationHook(t *testing.T) {
	seen := map[string]bool{}
	for _, rev := range []int{1, 2, 3} {
		r := defaults
		r.revision = rev
		o := index(t, render(t, r).objs)
		j := o.jobs[r.names().migrate]
		if j == nil {
			t.Fatalf("revision %d: no Job %s (have %v)", rev, r.names().migrate, slices.Collect(maps.Keys(o.jobs)))
		}
		seen[j.Name] = true
		hooks := strings.Split(j.Annotations["helm.sh/hook"], ",")
		if !slices.Contains(hooks, "pre-install") || !slices.Contains(hooks, "pre-upgrade") {
			t.Errorf("%s: helm.sh/hook %q, want pre-install and pre-upgrade", j.Name, j.Annotations["helm.sh/hook"])
		}
		if p := j.Annotations["helm.sh/hook-delete-policy"]; !strings.Contains(p, "before-hook-creation") {
			t.Errorf("%s: hook-delete-policy %q: the previous revision's Job would stay", j.Name, p)
		}
		// A pre-install hook runs before the release's ConfigMap exists.
		for _, c := range j.Spec.Template.Spec.Containers {
			if len(c.EnvFrom) > 0 {
				t.Errorf("%s: envFrom %v, which does not exist yet when a pre-install hook runs", j.Name, c.EnvFrom)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("Job names %v, want one per revision", seen)
	}
}

// Settings the chart sets itself, from other values, rather than through
// values.config; and those only `svcbridge dev` reads.
var (
	chartSetSettings = []string{"LISTEN", "METRICS_LISTEN", "CONTROLLER_NAMESPACE", "DATABASE_URL",
		"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA", "TEMPORAL_API_KEY", "OIDC_CLIENT_SECRET", "AUTH_TOKENS_FILE"}
	devSettings = []string{"DATA_DIR", "TEMPORAL_PORT", "UI_PORT"}
)

// TestChartValuesAreTheSettings: values.config takes exactly svcbridge's
// settings (config.Settings) but those the chart sets from other values
// (the production release renders each of them) and dev's.
func TestChartValuesAreTheSettings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Config struct {
				Properties           map[string]any `json:"properties"`
				AdditionalProperties bool           `json:"additionalProperties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Properties.Config.AdditionalProperties {
		t.Errorf("values.schema.json lets config take any key")
	}
	inSchema := schema.Properties.Config.Properties
	for _, s := range config.Settings {
		_, ok := inSchema[s.Env]
		other := slices.Contains(chartSetSettings, s.Env) || slices.Contains(devSettings, s.Env)
		switch {
		case ok && other:
			t.Errorf("%s is both in values.config and set by the chart", s.Env)
		case !ok && !other:
			t.Errorf("setting %s cannot be given to the chart: add it to values.schema.json's config", s.Env)
		}
		delete(inSchema, s.Env)
	}
	for env := range inSchema {
		t.Errorf("values.schema.json's config takes %s, which is no setting of svcbridge (config.Settings)", env)
	}
	// The chart-set settings really are set, each from its value.
	set := map[string]bool{}
	for _, m := range render(t, production).objs {
		switch o := m.obj.(type) {
		case *corev1.ConfigMap:
			for k := range o.Data {
				set[k] = true
			}
		case *appsv1.Deployment:
			for _, e := range o.Spec.Template.Spec.Containers[0].Env {
				set[e.Name] = true
			}
		}
	}
	for _, env := range chartSetSettings {
		if !set[env] {
			t.Errorf("the production release does not set %s", env)
		}
	}
}

// TestChartSchemaRefuses: values.schema.json stops a wrong value at
// install, with the value's path, before anything is rendered.
func TestChartSchemaRefuses(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown setting", map[string]any{"config": map[string]any{"TEMPORAL_ADRESS": "x:7233"}}, "TEMPORAL_ADRESS"},
		{"a number where a name is wanted", map[string]any{"config": map[string]any{"LOG_LEVEL": 3}}, "LOG_LEVEL"},
		{"a negative number", map[string]any{"config": map[string]any{"DB_MAX_OPEN_CONNS": -1}}, "DB_MAX_OPEN_CONNS"},
		{"not a log level", map[string]any{"config": map[string]any{"LOG_LEVEL": "loud"}}, "LOG_LEVEL"},
		{"not a duration", map[string]any{"config": map[string]any{"RESYNC_INTERVAL": "30"}}, "RESYNC_INTERVAL"},
		{"latest", map[string]any{"image": map[string]any{"tag": "latest"}}, "tag"},
		{"root", map[string]any{"podSecurityContext": map[string]any{"runAsNonRoot": false}}, "runAsNonRoot"},
		{"unknown top-level value", map[string]any{"replicas": 3}, "replicas"},
		{"no database Secret", map[string]any{"database": map[string]any{"existingSecret": ""}}, "existingSecret"},
		{"two hub routers", map[string]any{"hubRouter": map[string]any{"replicas": 2}}, "replicas"},
		{"unknown hub router value", map[string]any{"hubRouter": map[string]any{"configMap": "mine"}}, "configMap"},
		{"a runbook path, not a URL", map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"runbookURL": "docs/runbook.md"}}}, "runbookURL"},
		{"a runbook URL with a section", map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"runbookURL": "https://wiki.example.org/svcbridge#alerts"}}}, "runbookURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderValues(t, c, release{name: "svcbridge", namespace: "iofog", revision: 1, values: tc.values})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("values %v: error %v, want one naming %s", tc.values, err, tc.want)
			}
		})
	}
}

// ingressPrefixMatches is Kubernetes' pathType Prefix: path elements, not
// characters, so /api/v3/agent matches /api/v3/agent/router but not
// /api/v3/agents.
func ingressPrefixMatches(prefix, path string) bool {
	p := strings.Split(strings.Trim(prefix, "/"), "/")
	q := strings.Split(strings.Trim(path, "/"), "/")
	return len(q) >= len(p) && slices.Equal(q[:len(p)], p) || prefix == "/"
}

// TestChartIngresses: the agents' Ingress exposes the pull API and no user
// route; both reach the api Service's port.
func TestChartIngresses(t *testing.T) {
	r := production
	out := render(t, r)
	o := index(t, out.objs)
	svc := o.services[r.names().api]
	if svc == nil {
		t.Fatalf("no Service %s", r.names().api)
	}
	var ingresses []*networkingv1.Ingress
	for _, m := range out.objs {
		if in, ok := m.obj.(*networkingv1.Ingress); ok {
			ingresses = append(ingresses, in)
		}
	}
	if len(ingresses) != 2 {
		t.Fatalf("%d Ingresses, want the API's and the agents'", len(ingresses))
	}
	agentRoutes := []string{"/api/v3/agent/config/changes", "/api/v3/agent/router"}
	userRoutes := []string{"/api/v3/agents", "/api/v3/agents/fog-a/router", "/api/v3/services", "/metrics", "/api/v3/user/login"}
	for _, in := range ingresses {
		if in.Spec.IngressClassName == nil || len(in.Spec.TLS) != 1 {
			t.Errorf("Ingress %s: class %v, TLS %v", in.Name, in.Spec.IngressClassName, in.Spec.TLS)
		}
		var paths []string
		for _, rule := range in.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				paths = append(paths, p.Path)
				be := p.Backend.Service
				if be == nil || be.Name != svc.Name || !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == be.Port.Name }) {
					t.Errorf("Ingress %s: backend %v is not a port of Service %s", in.Name, p.Backend, svc.Name)
				}
				if p.PathType == nil || *p.PathType != networkingv1.PathTypePrefix {
					t.Errorf("Ingress %s: path %s is not pathType Prefix", in.Name, p.Path)
				}
			}
		}
		matches := func(route string) bool {
			return slices.ContainsFunc(paths, func(p string) bool { return ingressPrefixMatches(p, route) })
		}
		agents := strings.HasSuffix(in.Name, "-agents")
		for _, route := range agentRoutes {
			if !matches(route) {
				t.Errorf("Ingress %s does not route %s", in.Name, route)
			}
		}
		for _, route := range userRoutes {
			if matches(route) == agents {
				t.Errorf("Ingress %s (agents: %v) routes %s: %v", in.Name, agents, route, matches(route))
			}
		}
	}
}

func TestIngressPrefixMatches(t *testing.T) {
	for _, tc := range []struct {
		prefix, path string
		want         bool
	}{
		{"/api/v3/agent", "/api/v3/agent/router", true},
		{"/api/v3/agent", "/api/v3/agent", true},
		{"/api/v3/agent", "/api/v3/agents", false},
		{"/api/v3/agent", "/api/v3", false},
		{"/", "/anything", true},
	} {
		if got := ingressPrefixMatches(tc.prefix, tc.path); got != tc.want {
			t.Errorf("ingressPrefixMatches(%q, %q) = %v, want %v", tc.prefix, tc.path, got, tc.want)
		}
	}
}

// serviceMonitorSpec is the part of prometheus-operator's ServiceMonitor
// the chart writes, decoded strictly (its Go types would pull a newer
// Kubernetes API than this module builds with).
type serviceMonitorSpec struct {
	Selector  metav1.LabelSelector `json:"selector"`
	Endpoints []struct {
		Port     string `json:"port"`
		Path     string `json:"path"`
		Interval string `json:"interval"`
	} `json:"endpoints"`
}

// TestChartMonitoring: the ServiceMonitor scrapes /metrics on every api and
// worker pod through Services that exist, the PrometheusRule carries
// deploy/observability/alerts.yaml's rules, their runbook_url on the
// values' runbookURL, and the dashboard ConfigMap its dashboard.
func TestChartMonitoring(t *testing.T) {
	r := production
	out := render(t, r)
	o := index(t, out.objs)
	if len(out.custom["ServiceMonitor"]) != 1 || len(out.custom["PrometheusRule"]) != 1 {
		t.Fatalf("custom objects %v, want one ServiceMonitor and one PrometheusRule", out.custom)
	}
	sm := out.custom["ServiceMonitor"][0]
	if sm.Metadata.Labels["release"] != "kube-prometheus" {
		t.Errorf("ServiceMonitor labels %v lack the values' release label", sm.Metadata.Labels)
	}
	var spec serviceMonitorSpec
	if err := sigsyaml.UnmarshalStrict(sm.Spec, &spec); err != nil {
		t.Fatalf("ServiceMonitor spec: %v", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	// Each metrics port of a role's pods is scraped through a selected Service.
	for _, role := range []struct{ deployment, port string }{{r.names().api, "http"}, {r.names().worker, "metrics"}} {
		d := o.deployments[role.deployment]
		found := false
		for _, s := range o.services {
			if !sel.Matches(labels.Set(s.Labels)) || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				continue
			}
			for _, sp := range s.Spec.Ports {
				for _, ep := range spec.Endpoints {
					found = found || (ep.Port == sp.Name && sp.Name == role.port && ep.Path == "/metrics")
				}
			}
		}
		if !found {
			t.Errorf("no ServiceMonitor endpoint scrapes port %s of %s's pods", role.port, role.deployment)
		}
	}
	dashboard, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if cm := o.configMaps[strings.TrimSuffix(r.names().configMap, "-config")+"-dashboard"]; cm == nil || cm.Data["svcbridge.json"] != strings.TrimSpace(string(dashboard)) || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("no ConfigMap of %s for Grafana's sidecar (have %v)", dashboardFile, slices.Collect(maps.Keys(o.configMaps)))
	}
	fromChart := parseRules(t, "PrometheusRule spec", out.custom["PrometheusRule"][0].Spec)
	checkRunbookURLs(t, "PrometheusRule", fromChart, productionRunbook)
	file, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	fromFile := parseRules(t, alertsFile, file)
	for _, g := range fromFile.Groups {
		for _, r := range g.Rules {
			r.Annotations["runbook_url"] = strings.Replace(r.Annotations["runbook_url"], runbookPlaceholder, productionRunbook, 1)
		}
	}
	if diff := cmp.Diff(fromFile, fromChart); diff != "" {
		t.Errorf("the PrometheusRule's rules differ from %s (-file +chart):\n%s", alertsFile, diff)
	}
}

// ---- the kustomization and the chart ----

// buildKustomization runs kustomize (the library kubectl apply -k embeds)
// on deploy/kubernetes and decodes its objects strictly.
func buildKustomization(t *testing.T) []manifest {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), kubeDir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", kubeDir, err)
	}
	y, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest
	for i, doc := range splitYAML(t, "kustomize build", bytes.NewReader(y)) {
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("kustomize build: document %d: %v", i+1, err)
		}
		out = append(out, manifest{file: "kustomize build", obj: obj})
	}
	return out
}

// Helm's own labels and annotations, which the kustomization has no
// equivalent of: a release's identity and the roll-on-config checksum.
var (
	helmLabels      = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}
	helmAnnotations = []string{"checksum/config", "helm.sh/hook", "helm.sh/hook-weight", "helm.sh/hook-delete-policy"}
)

// comparable returns obj as the kustomization and the chart must agree on
// it: without Helm's labels and annotations, in namespace, the migrate Job
// under its base name (each tool names it per image tag or per revision),
// and settings read from a ConfigMap inlined and sorted (the chart's hook
// cannot use the ConfigMap).
func comparable(obj runtime.Object, namespace string, configMaps map[string]*corev1.ConfigMap) (string, runtime.Object) {
	obj = obj.DeepCopyObject()
	meta := obj.(metav1.Object)
	strip := func(m map[string]string, keys []string) map[string]string {
		for _, k := range keys {
			delete(m, k)
		}
		if len(m) == 0 {
			return nil
		}
		return m
	}
	meta.SetLabels(strip(meta.GetLabels(), helmLabels))
	meta.SetAnnotations(strip(meta.GetAnnotations(), helmAnnotations))
	if meta.GetNamespace() == "" {
		meta.SetNamespace(namespace)
	}
	pod := func(p *corev1.PodTemplateSpec) {
		p.Labels = strip(p.Labels, helmLabels)
		p.Annotations = strip(p.Annotations, helmAnnotations)
		for i := range p.Spec.TopologySpreadConstraints {
			p.Spec.TopologySpreadConstraints[i].LabelSelector.MatchLabels = strip(p.Spec.TopologySpreadConstraints[i].LabelSelector.MatchLabels, helmLabels)
		}
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			var env []corev1.EnvVar
			for _, ef := range c.EnvFrom {
				if cm := configMaps[ef.ConfigMapRef.Name]; cm != nil {
					for k, v := range cm.Data {
						env = append(env, corev1.EnvVar{Name: ef.Prefix + k, Value: v})
					}
				}
			}
			c.EnvFrom = nil
			c.Env = append(env, c.Env...)
			sort.SliceStable(c.Env, func(a, b int) bool { return c.Env[a].Name < c.Env[b].Name })
		}
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Selector.MatchLabels = strip(o.Spec.Selector.MatchLabels, helmLabels)
		pod(&o.Spec.Template)
	case *batchv1.Job:
		if i := strings.LastIndex(o.Name, "-"); strings.HasPrefix(o.Name, migrateName+"-") {
			o.Name = o.Name[:i]
		}
		pod(&o.Spec.Template)
	case *corev1.Service:
		o.Spec.Selector = strip(o.Spec.Selector, helmLabels)
	case *policyv1.PodDisruptionBudget:
		o.Spec.Selector.MatchLabels = strip(o.Spec.Selector.MatchLabels, helmLabels)
	}
	return fmt.Sprintf("%s %s/%s", obj.GetObjectKind().GroupVersionKind().Kind, meta.GetNamespace(), meta.GetName()), obj
}

// comparables indexes objs as comparable makes them.
func comparables(t *testing.T, objs []manifest, namespace string) map[string]runtime.Object {
	o := index(t, objs)
	out := map[string]runtime.Object{}
	for _, m := range objs {
		key, obj := comparable(m.obj, namespace, o.configMaps)
		out[key] = obj
	}
	return out
}

// TestKustomizationAgreesWithChart: `kubectl apply -k deploy/kubernetes`
// and `helm install svcbridge` in the same namespace with the default
// values make the same objects, field for field, but for Helm's own labels
// and annotations and the migrate Job's name.
func TestKustomizationAgreesWithChart(t *testing.T) {
	kust := buildKustomization(t)
	ns := readKustomization(t).Namespace
	r := defaults
	r.namespace = ns
	fromKust := comparables(t, kust, ns)
	fromChart := comparables(t, render(t, r).objs, ns)
	for _, key := range slices.Sorted(maps.Keys(fromKust)) {
		c, ok := fromChart[key]
		if !ok {
			t.Errorf("the kustomization makes %s, the chart does not", key)
			continue
		}
		if diff := cmp.Diff(fromKust[key], c); diff != "" {
			t.Errorf("%s differs (-kustomization +chart):\n%s", key, diff)
		}
	}
	for key := range fromChart {
		if _, ok := fromKust[key]; !ok {
			t.Errorf("the chart makes %s, the kustomization does not", key)
		}
	}
	// The migrate Job is named after the image tag it runs.
	o := index(t, kust)
	for name, j := range o.jobs {
		image := j.Spec.Template.Spec.Containers[0].Image
		if tag := image[strings.LastIndex(image, ":")+1:]; name != migrateName+"-"+tag {
			t.Errorf("the kustomization's Job %s runs %s; want it named %s-%s", name, image, migrateName, tag)
		}
	}
	// The kustomization pins the chart's appVersion.
	if c := loadChart(t); !slices.ContainsFunc(readKustomization(t).Images, func(im kustomizeImage) bool {
		return im.NewTag == c.Metadata.AppVersion
	}) {
		t.Errorf("kustomization.yaml's image tag is not the chart's appVersion %s", c.Metadata.AppVersion)
	}
}

// TestChartRemoteControlPlane: with CONTROL_PLANE remote svcbridge needs
// no Kubernetes API: no Role, and no token in any pod.
func TestChartRemoteControlPlane(t *testing.T) {
	r := release{name: "svcbridge", namespace: "iofog", revision: 1,
		values: map[string]any{"config": map[string]any{"CONTROL_PLANE": "remote"}}}
	out := render(t, r)
	o := index(t, append(out.objs, secretsOf(defaults)...))
	if len(o.roles) > 0 || len(o.bindings) > 0 {
		t.Errorf("Roles %v and RoleBindings %v on the remote control plane", slices.Collect(maps.Keys(o.roles)), o.bindings)
	}
	for _, w := range o.workloads() {
		if a := w.pod.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s %s mounts a service account token", w.kind, w.name)
		}
	}
	checkEnv(t, o, r.namespace)
}

// TestChartTakesSetValues: `helm install --set config.DB_MAX_OPEN_CONNS=5`
// hands the chart a number and `--set config.TEMPORAL_TLS=true` a boolean;
// both reach the environment as the strings svcbridge reads.
func TestChartTakesSetValues(t *testing.T) {
	r := release{name: "svcbridge", namespace: "iofog", revision: 1, values: map[string]any{"config": map[string]any{
		"DB_MAX_OPEN_CONNS": int64(5), "DB_MAX_IDLE_CONNS": int64(5), "TEMPORAL_TLS": true, "DRIFT_INTERVAL": int64(0)}}}
	o := index(t, append(render(t, r).objs, secretsOf(defaults)...))
	cm := o.configMaps[r.names().configMap]
	if cm == nil {
		t.Fatalf("no ConfigMap %s", r.names().configMap)
	}
	for k, want := range map[string]string{"DB_MAX_OPEN_CONNS": "5", "TEMPORAL_TLS": "true", "DRIFT_INTERVAL": "0"} {
		if cm.Data[k] != want {
			t.Errorf("ConfigMap %s = %q, want %q", k, cm.Data[k], want)
		}
	}
	checkEnv(t, o, r.namespace)
}

// uiImage is the Temporal Web UI's image, whose tag is its release.
const uiImage = "temporalio/ui:"

// TestOneWebUIVersion: Compose, the chart (if it deploys a Web UI) and
// `dev` (which embeds github.com/temporalio/ui-server) run one Web UI
// release, the one the README's click path was checked on.
func TestOneWebUIVersion(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/temporalio/ui-server/v2" {
			want = strings.TrimPrefix(f[1], "v")
		}
	}
	if want == "" {
		t.Fatal("go.mod does not require github.com/temporalio/ui-server/v2")
	}
	if got := loadCompose(t).Services["temporal-ui"].Image; got != uiImage+want {
		t.Errorf("docker-compose.yml temporal-ui: image %s, want %s%s (go.mod's ui-server, embedded by dev)", got, uiImage, want)
	}
	images := regexp.MustCompile(regexp.QuoteMeta(uiImage) + `[^"]*`)
	for _, r := range []release{defaults, production} {
		for _, m := range render(t, r).objs {
			b, err := json.Marshal(m.obj)
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range images.FindAllString(string(b), -1) {
				if got != uiImage+want {
					t.Errorf("chart %s: image %s, want %s%s (go.mod's ui-server)", m.file, got, uiImage, want)
				}
			}
		}
	}
}

// ---- the hub router ----

// withHubRouter runs the hub router, with the ioFog controller in another
// namespace than the release's.
var withHubRouter = release{name: "edge", namespace: "svcbridge", revision: 1, values: map[string]any{
	"hubRouter":           map[string]any{"enabled": true},
	"controllerNamespace": "iofog",
}}

// hubRouterName is the hub router's Deployment, Service, ServiceAccount
// and Role in release r.
func hubRouterName(r release) string {
	return strings.TrimSuffix(r.names().api, "-api") + "-hub-router"
}

// workerKube is what the worker makes of its settings (config.Load, as
// the binary reads them) for its Kubernetes side: the controller namespace
// its Services are created in and the selector they carry.
func workerKube(t *testing.T, o objects, r release) kube.Config {
	t.Helper()
	d := o.deployments[r.names().worker]
	if d == nil {
		t.Fatalf("no Deployment %s", r.names().worker)
	}
	fs := pflag.NewFlagSet(d.Name, pflag.ContinueOnError)
	config.RoleFlags(fs, "dev")
	flags := map[string]string{}
	for _, s := range config.Settings {
		flags[s.Env] = s.Flag
	}
	set := func(env, value string) {
		if f, ok := flags[env]; ok {
			if err := fs.Set(f, value); err != nil {
				t.Errorf("%s: %s=%q: %v", d.Name, env, value, err)
			}
		}
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil || o.configMaps[ef.ConfigMapRef.Name] == nil {
			continue
		}
		for k, v := range o.configMaps[ef.ConfigMapRef.Name].Data {
			set(ef.Prefix+k, v)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			set(e.Name, r.namespace) // the worker's pod is in the release's
		case e.ValueFrom.SecretKeyRef != nil:
			if sec := o.secrets[e.ValueFrom.SecretKeyRef.Name]; sec != nil {
				set(e.Name, sec.StringData[e.ValueFrom.SecretKeyRef.Key])
			}
		}
	}
	cfg, err := config.Load(fs)
	if err != nil {
		t.Fatalf("%s: svcbridge would not start with these settings: %v", d.Name, err)
	}
	return cfg.Kube
}

// TestChartHubRouter: hubRouter.enabled runs a skupper router from the
// ConfigMap iofog-router with router-sync beside it. svcbridge's
// Kubernetes Services (in the worker's controller namespace, with the
// selector it derives from DISTRIBUTION and COMPONENT_LABEL_DOMAIN) select
// its pods and no others; the router starts from the mounted ConfigMap;
// the sync watches that ConfigMap, which its Role lets it read and nothing
// else, and manages the router on a normal listener of that configuration;
// the start-up configuration is created, kept, when none exists.
func TestChartHubRouter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]any
		label  string // the router component label key svcbridge's Services select
	}{
		{"datasance", map[string]any{}, "datasance.com/component"},
		{"iofog", map[string]any{"DISTRIBUTION": "iofog"}, "iofog.org/component"},
		{"component label domain", map[string]any{"DISTRIBUTION": "iofog", "COMPONENT_LABEL_DOMAIN": "edge.example.com"}, "edge.example.com/component"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := withHubRouter
			r.values = maps.Clone(r.values)
			r.values["config"] = tc.config
			out := render(t, r)
			o := index(t, append(out.objs, secretsOf(defaults)...))
			checkWorkloadsSafe(t, o)
			k := workerKube(t, o, r)
			if k.RouterLabelKey() != tc.label {
				t.Fatalf("the worker selects router pods by %s, want %s", k.RouterLabelKey(), tc.label)
			}
			name := hubRouterName(r)
			for _, m := range out.objs {
				if meta := m.obj.(metav1.Object); meta.GetName() == name || meta.GetName() == kube.HubConfigMapName {
					if meta.GetNamespace() != k.Namespace {
						t.Errorf("%s %s: namespace %q, want the controller's %s", m.obj.GetObjectKind().GroupVersionKind().Kind, meta.GetName(), meta.GetNamespace(), k.Namespace)
					}
				}
			}
			d := o.deployments[name]
			if d == nil {
				t.Fatalf("no Deployment %s (have %v)", name, slices.Collect(maps.Keys(o.deployments)))
			}
			pod := d.Spec.Template

			// svcbridge's Kubernetes Services reach the router, and only it.
			services := labels.SelectorFromSet(k.Selector())
			for _, other := range o.deployments {
				if got, want := services.Matches(labels.Set(other.Spec.Template.Labels)), other.Name == name; got != want {
					t.Errorf("svcbridge's Services (selector %v) select the pods %v of %s: %v, want %v", k.Selector(), other.Spec.Template.Labels, other.Name, got, want)
				}
			}
			if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(labels.Set(pod.Labels)) {
				t.Errorf("%s: selector %v does not select its own pods %v (%v)", name, d.Spec.Selector, pod.Labels, err)
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("%s: replicas %v, strategy %q: want one router at a time (Recreate)", name, d.Spec.Replicas, d.Spec.Strategy.Type)
			}
			containers := map[string]corev1.Container{}
			for _, c := range pod.Spec.Containers {
				containers[c.Name] = c
			}
			router, sync := containers["router"], containers["router-sync"]

			// The router runs from the ConfigMap, mounted read-only.
			if len(router.Command) != 3 || router.Command[0] != "skrouterd" || router.Command[1] != "-c" {
				t.Fatalf("router: command %q, want skrouterd -c FILE", router.Command)
			}
			file := router.Command[2]
			fromConfigMap := false
			for _, vm := range router.VolumeMounts {
				for _, v := range pod.Spec.Volumes {
					if v.Name != vm.Name || v.ConfigMap == nil || v.ConfigMap.Name != kube.HubConfigMapName || vm.SubPath != "" {
						continue
					}
					for _, item := range v.ConfigMap.Items {
						if item.Key == kube.HubConfigKey && path.Join(vm.MountPath, item.Path) == file {
							fromConfigMap = vm.ReadOnly
						}
					}
				}
			}
			if !fromConfigMap {
				t.Errorf("router: %s is not key %s of ConfigMap %s, mounted read-only (a whole volume: a subPath is never updated)", file, kube.HubConfigKey, kube.HubConfigMapName)
			}

			// The sync watches the controller namespace's ConfigMap and
			// manages the router on a normal listener of its start-up
			// configuration, as this pod's ServiceAccount.
			worker := o.deployments[r.names().worker].Spec.Template.Spec.Containers[0]
			if sync.Image != worker.Image || len(sync.Command) != 0 {
				t.Errorf("router-sync: image %s command %q, want the worker's image %s and its entrypoint", sync.Image, sync.Command, worker.Image)
			}
			wantArgs := []string{"router-sync", "--configmap", k.Namespace + "/" + kube.HubConfigMapName, "--router", "127.0.0.1:5672"}
			if !slices.Equal(sync.Args, wantArgs) {
				t.Errorf("router-sync: args %q, want %q", sync.Args, wantArgs)
			}
			for _, env := range []string{"LOG_LEVEL", "LOG_FORMAT"} {
				if got, want := envValue(sync, o, env), o.configMaps[r.names().configMap].Data[env]; got != want {
					t.Errorf("router-sync: %s=%q, want the chart's %q", env, got, want)
				}
			}
			cm := o.configMaps[kube.HubConfigMapName]
			if cm == nil {
				t.Fatalf("no ConfigMap %s created (none exists)", kube.HubConfigMapName)
			}
			if cm.Annotations["helm.sh/resource-policy"] != "keep" {
				t.Errorf("ConfigMap %s: annotations %v, want helm.sh/resource-policy: keep (an upgrade or uninstall would delete svcbridge's pairs)", cm.Name, cm.Annotations)
			}
			entities, err := routerconfig.FileEntities([]byte(cm.Data[kube.HubConfigKey]))
			if err != nil {
				t.Fatalf("ConfigMap %s: %s: %v", cm.Name, kube.HubConfigKey, err)
			}
			listeners := map[string]string{} // role: host:port
			for _, e := range entities {
				switch e.Type {
				case routerconfig.EntityRouter:
					if e.Attrs["mode"] != routerconfig.ModeInterior || e.Name == "" {
						t.Errorf("start-up router %v, want an id and mode interior", e.Attrs)
					}
				case routerconfig.EntityListener:
					listeners[fmt.Sprint(e.Attrs["role"])] = net.JoinHostPort(fmt.Sprint(e.Attrs["host"]), fmt.Sprint(e.Attrs["port"]))
				}
			}
			if mgmt := sync.Args[len(sync.Args)-1]; listeners[routerconfig.RoleNormal] != mgmt {
				t.Errorf("router-sync manages %s, the start-up configuration's normal listener is %q (listeners %v)", mgmt, listeners[routerconfig.RoleNormal], listeners)
			}

			// The links' Service reaches the edge and inter-router listeners.
			ports := map[string]int32{}
			for _, p := range router.Ports {
				ports[p.Name] = p.ContainerPort
			}
			svc := o.services[name]
			if svc == nil {
				t.Fatalf("no Service %s", name)
			}
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(svc.Spec.Selector) == 0 {
				t.Errorf("Service %s: selector %v does not select the router pods %v", name, svc.Spec.Selector, pod.Labels)
			}
			roles := map[int32]string{}
			for _, p := range svc.Spec.Ports {
				roles[p.Port] = p.Name
				if target := ports[p.TargetPort.StrVal]; target != p.Port || listeners[p.Name] != net.JoinHostPort("0.0.0.0", fmt.Sprint(target)) {
					t.Errorf("Service %s: port %s %d targets %s (container port %d), listeners %v", name, p.Name, p.Port, p.TargetPort.String(), target, listeners)
				}
			}
			if want := map[int32]string{routerconfig.EdgePort: routerconfig.RoleEdge, routerconfig.InterRouterPort: routerconfig.RoleInterRouter}; !maps.Equal(roles, want) {
				t.Errorf("Service %s: ports %v, want %v", name, roles, want)
			}

			// Its Role reads iofog-router and nothing else, bound to the pod's ServiceAccount.
			sa := pod.Spec.ServiceAccountName
			if a := o.accounts[sa]; a == nil || a.Namespace != d.Namespace {
				t.Fatalf("%s: serviceAccountName %q is no ServiceAccount of its namespace", name, sa)
			}
			var rules []rbacv1.PolicyRule
			for _, b := range o.bindings {
				for _, s := range b.Subjects {
					if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == d.Namespace && b.Namespace == k.Namespace {
						if role := o.roles[b.RoleRef.Name]; b.RoleRef.Kind == "Role" && role != nil && role.Namespace == b.Namespace {
							rules = append(rules, role.Rules...)
						}
					}
				}
			}
			want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{kube.HubConfigMapName}, Verbs: []string{"get", "list", "watch"}}}
			if diff := cmp.Diff(want, rules); diff != "" {
				t.Errorf("ServiceAccount %s may (-want +got):\n%s", sa, diff)
			}
		})
	}
}

// fakeCluster answers the templates' lookup from objs, ConfigMaps only.
type fakeCluster struct {
	t    *testing.T
	objs []runtime.Object
}

func (c fakeCluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	if apiVersion != "v1" || kind != "ConfigMap" {
		c.t.Errorf("lookup of %s %s", apiVersion, kind)
		return nil, false, fmt.Errorf("no %s %s in this cluster", apiVersion, kind)
	}
	return dynamicfake.NewSimpleDynamicClient(scheme.Scheme, c.objs...).Resource(corev1.SchemeGroupVersion.WithResource("configmaps")), true, nil
}

// TestChartHubRouterKeepsTheConfigMap: once iofog-router exists (created
// by the first install, by the controller or by hand) the chart never
// renders it again, so no upgrade overwrites svcbridge's pairs; one in
// another namespace does not count. createConfigMap false never makes it.
func TestChartHubRouterKeepsTheConfigMap(t *testing.T) {
	existing := func(namespace string) runtime.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.HubConfigMapName, Namespace: namespace},
			Data: map[string]string{kube.HubConfigKey: `[["tcpListener", {"name": "checkout-listener"}]]`}}
	}
	for _, tc := range []struct {
		name    string
		cluster []runtime.Object
		create  bool
		want    bool
	}{
		{"none exists", nil, true, true},
		{"it exists", []runtime.Object{existing("iofog")}, true, false},
		{"one in another namespace", []runtime.Object{existing(withHubRouter.namespace)}, true, true},
		{"createConfigMap false", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := withHubRouter
			r.revision = 2
			r.values = maps.Clone(r.values)
			r.values["hubRouter"] = map[string]any{"enabled": true, "createConfigMap": tc.create}
			o := index(t, renderIn(t, r, fakeCluster{t, tc.cluster}).objs)
			if _, got := o.configMaps[kube.HubConfigMapName]; got != tc.want {
				t.Errorf("ConfigMap %s rendered: %v, want %v", kube.HubConfigMapName, got, tc.want)
			}
			if o.deployments[hubRouterName(r)] == nil {
				t.Errorf("no Deployment %s", hubRouterName(r))
			}
		})
	}
}

// TestChartRefuses: values the schema cannot judge alone fail the install
// with the chart's message: the hub router on the remote control plane
// (there the hub is an agent's router), alerts without the address of
// their runbook.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"hub router on the remote control plane", map[string]any{
			"config":    map[string]any{"CONTROL_PLANE": "remote"},
			"hubRouter": map[string]any{"enabled": true},
		}, "hubRouter.enabled: the hub router runs on the Kubernetes control plane only"},
		{"alerts without a runbook", map[string]any{
			"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}},
		}, "metrics.prometheusRule.runbookURL: the http(s) address where your team reads docs/runbook.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderFiles(t, release{name: "svcbridge", namespace: "iofog", revision: 1, values: tc.values}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render with %v: error %v, want the chart's message %q", tc.values, err, tc.want)
			}
		})
	}
}
