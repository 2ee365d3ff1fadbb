// Package deploy holds svcbridge's deployment files: the Kubernetes
// manifests (deploy/kubernetes, applied with kustomize), the Helm chart
// (deploy/helm/svcbridge), the Grafana dashboard and Prometheus alerts
// (deploy/observability) and the container health probe (deploy/probe).
// The Dockerfile, .dockerignore and docker-compose.yml live at the
// repository root.
//
// Nothing here can be pulled or run on a machine without a container
// engine, so these tests check the files the way the tools would read them:
// every Kubernetes manifest is decoded strictly with client-go's scheme,
// the chart is rendered and linted with Helm's SDK and the kustomization
// built with kustomize's, docker-compose.yml is validated against the
// Compose specification's JSON schema and its PostgreSQL connections added
// up (systemtest's TestComposeRehearsal runs it), the rules and the dashboard's
// queries are parsed with Prometheus' parsers, the rules unit-tested with
// promtool (systemtest's TestPrometheus* evaluate both on a real
// Prometheus), and all are checked for what
// an operator relies on (non-root, probes, resources, roles, and only
// settings svcbridge reads, metrics it exports).
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/schema"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"svcbridge/config"
	"svcbridge/deploy/compose"
)

const (
	kubeDir      = "kubernetes"
	root         = ".."
	apiName      = "svcbridge-api"
	workerName   = "svcbridge-worker"
	migrateName  = "svcbridge-migrate"
	configMap    = "svcbridge-config"
	databaseEnv  = "DATABASE_URL"
	readinessURL = "/readyz"
	livenessURL  = "/healthz"
)

// ---- the README's configuration table ----

// readmeSetting is one row of the README's configuration table.
type readmeSetting struct{ env, flag string }

// readmeTable returns the rows of the README's configuration table, in order.
func readmeTable(t *testing.T) []readmeSetting {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []readmeSetting
	in := false
	// A row may document several variables with their flags, in order
	// (`TEMPORAL_TLS_CERT`, `TEMPORAL_TLS_KEY` | `--temporal-tls-cert`, ...).
	row := regexp.MustCompile("^\\|\\s*(`[A-Z][A-Z0-9_]*`(?:,\\s*`[A-Z][A-Z0-9_]*`)*)\\s*\\|([^|]*)\\|")
	env := regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	flag := regexp.MustCompile("`--([a-z0-9-]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Configuration"
			continue
		}
		m := row.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		flags := flag.FindAllStringSubmatch(m[2], -1)
		for i, e := range env.FindAllStringSubmatch(m[1], -1) {
			r := readmeSetting{env: e[1]}
			if i < len(flags) {
				r.flag = flags[i][1]
			}
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		t.Fatal("README.md has no configuration table under '## Configuration'")
	}
	return rows
}

// readmeSettings returns the environment variables of the README's
// configuration table, in order.
func readmeSettings(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, r := range readmeTable(t) {
		names = append(names, r.env)
	}
	return names
}

func documented(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, n := range readmeSettings(t) {
		out[n] = true
	}
	return out
}

// TestReadmeTableIsTheSettings guards the list the other tests compare
// against: every setting the README documents is one svcbridge reads.
// (Settings missing from the README are the README's business, not this
// directory's.)
func TestReadmeTableIsTheSettings(t *testing.T) {
	code := map[string]string{}
	for _, s := range config.Settings {
		code[s.Env] = s.Flag
	}
	for _, r := range readmeTable(t) {
		flag, ok := code[r.env]
		switch {
		case r.flag == "":
			// No flag: a variable a library reads (KUBECONFIG).
		case !ok:
			t.Errorf("README's configuration table documents %s, which config.Settings does not have", r.env)
		case flag != r.flag:
			t.Errorf("README's configuration table gives %s the flag --%s, config.Settings --%s", r.env, r.flag, flag)
		}
	}
}

// checkSettings loads values (env name -> value) the way the binary does,
// so a value the binary would refuse at start fails here.
func checkSettings(t *testing.T, where string, values map[string]string) {
	t.Helper()
	fs := pflag.NewFlagSet(where, pflag.ContinueOnError)
	config.RoleFlags(fs, "dev")
	flag := map[string]string{}
	for _, s := range config.Settings {
		flag[s.Env] = s.Flag
	}
	for env, v := range values {
		f, ok := flag[env]
		if !ok {
			continue // reported by the documented-settings check
		}
		if err := fs.Set(f, v); err != nil {
			t.Errorf("%s: %s=%q: %v", where, env, v, err)
		}
	}
	if _, err := config.Load(fs); err != nil {
		t.Errorf("%s: svcbridge would not start with these settings: %v", where, err)
	}
}

// ---- Kubernetes ----

// manifest is one decoded YAML document.
type manifest struct {
	file string
	obj  runtime.Object
}

type kustomization struct {
	APIVersion string           `yaml:"apiVersion"`
	Kind       string           `yaml:"kind"`
	Namespace  string           `yaml:"namespace"`
	Resources  []string         `yaml:"resources"`
	Images     []kustomizeImage `yaml:"images"`
	// Checked by building the kustomization (TestKustomizationAgreesWithChart).
	Replacements []map[string]any `yaml:"replacements"`
}

type kustomizeImage struct {
	Name    string `yaml:"name"`
	NewName string `yaml:"newName"`
	NewTag  string `yaml:"newTag"`
}

func readKustomization(t *testing.T) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kubeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	return k
}

// manifestFiles lists the YAML files of deploy/kubernetes but the
// kustomization itself.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(kubeDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == "kustomization.yaml" || (!strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml")) {
			continue
		}
		files = append(files, n)
	}
	return files
}

// isExample reports a file that documents an object the operator creates
// (with real values) instead of the kustomization.
func isExample(file string) bool { return strings.Contains(file, ".example.") }

// strict decodes with client-go's scheme: an unknown kind or apiVersion,
// an unknown or misspelt field, or a duplicated key is an error, as for
// kubectl.
var strict = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	kjson.SerializerOptions{Yaml: true, Strict: true})

// splitYAML returns the documents of a YAML stream that hold something
// other than comments.
func splitYAML(t *testing.T, where string, r io.Reader) [][]byte {
	t.Helper()
	yr := kyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for i := 1; ; i++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", where, i, err)
		}
		if !isBlank(doc) {
			docs = append(docs, doc)
		}
	}
}

// decodeStrict decodes one document strictly (see strict), in a stable
// API version.
func decodeStrict(doc []byte) (runtime.Object, error) {
	obj, gvk, err := strict.Decode(doc, nil, nil)
	if err != nil {
		return nil, err
	}
	if strings.Contains(gvk.Version, "alpha") || strings.Contains(gvk.Version, "beta") {
		return nil, fmt.Errorf("%s uses %s; use the stable API version", gvk.Kind, gvk.GroupVersion())
	}
	return obj, nil
}

// decodeManifests strictly decodes every document of every manifest file.
func decodeManifests(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	for _, file := range manifestFiles(t) {
		b, err := os.ReadFile(filepath.Join(kubeDir, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitYAML(t, file, bytes.NewReader(b)) {
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s: document %d: %v", file, i+1, err)
				continue
			}
			out = append(out, manifest{file: file, obj: obj})
		}
	}
	if len(out) == 0 {
		t.Fatal("no manifests decoded")
	}
	return out
}

// isBlank reports a document of only comments and blank lines.
func isBlank(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// objects indexes decoded manifests by kind and name.
type objects struct {
	all         []manifest
	deployments map[string]*appsv1.Deployment
	jobs        map[string]*batchv1.Job
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    map[string]*corev1.Service
	accounts    map[string]*corev1.ServiceAccount
	roles       map[string]*rbacv1.Role
	bindings    []*rbacv1.RoleBinding
	pdbs        []*policyv1.PodDisruptionBudget
}

func index(t *testing.T, ms []manifest) objects {
	t.Helper()
	o := objects{all: ms, deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, accounts: map[string]*corev1.ServiceAccount{}, roles: map[string]*rbacv1.Role{}}
	for _, m := range ms {
		switch v := m.obj.(type) {
		case *appsv1.Deployment:
			o.deployments[v.Name] = v
		case *batchv1.Job:
			o.jobs[v.Name] = v
		case *corev1.ConfigMap:
			o.configMaps[v.Name] = v
		case *corev1.Secret:
			o.secrets[v.Name] = v
		case *corev1.Service:
			o.services[v.Name] = v
		case *corev1.ServiceAccount:
			o.accounts[v.Name] = v
		case *rbacv1.Role:
			o.roles[v.Name] = v
		case *rbacv1.RoleBinding:
			o.bindings = append(o.bindings, v)
		case *policyv1.PodDisruptionBudget:
			o.pdbs = append(o.pdbs, v)
		}
	}
	return o
}

// workload is a pod template and where it comes from.
type workload struct {
	kind, name string
	pod        corev1.PodTemplateSpec
}

func (o objects) workloads() []workload {
	var out []workload
	for _, d := range o.deployments {
		out = append(out, workload{"Deployment", d.Name, d.Spec.Template})
	}
	for _, j := range o.jobs {
		out = append(out, workload{"Job", j.Name, j.Spec.Template})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	k := readKustomization(t)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s, want kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		if listed[r] {
			t.Errorf("kustomization.yaml lists %s twice", r)
		}
		listed[r] = true
		if _, err := os.Stat(filepath.Join(kubeDir, r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}
	for _, f := range manifestFiles(t) {
		switch {
		case isExample(f) && listed[f]:
			t.Errorf("kustomization.yaml lists the example %s: an apply would overwrite the real object with placeholders", f)
		case !isExample(f) && !listed[f]:
			t.Errorf("%s is not listed in kustomization.yaml", f)
		}
	}
	if !listed["rbac.yaml"] {
		t.Errorf("kustomization.yaml does not list rbac.yaml")
	}
	if k.Namespace == "" {
		t.Errorf("kustomization.yaml sets no namespace; the manifests carry none of their own")
	}
}

func TestManifestsDecodeWithClientGoScheme(t *testing.T) {
	ms := decodeManifests(t)
	k := readKustomization(t)
	kinds := map[string]int{}
	for _, m := range ms {
		gvk := m.obj.GetObjectKind().GroupVersionKind()
		kinds[gvk.Kind]++
		meta, ok := m.obj.(interface{ GetNamespace() string })
		if !ok {
			continue
		}
		// Namespace-agnostic: the kustomization decides. A namespace that is
		// spelt out anyway must be the kustomization's.
		if ns := meta.GetNamespace(); ns != "" && ns != k.Namespace {
			t.Errorf("%s: %s in namespace %s, but kustomization.yaml puts everything in %s", m.file, gvk.Kind, ns, k.Namespace)
		}
		if ns := meta.GetNamespace(); ns != "" && m.file != "rbac.yaml" {
			t.Errorf("%s: %s sets namespace %s; leave it to kustomization.yaml", m.file, gvk.Kind, ns)
		}
	}
	for _, want := range []string{"Deployment", "Service", "ConfigMap", "Secret", "Job", "ServiceAccount", "Role", "RoleBinding"} {
		if kinds[want] == 0 {
			t.Errorf("no %s among the manifests (%v)", want, kinds)
		}
	}
}

func TestWorkloadsRunSafely(t *testing.T) {
	checkWorkloadsSafe(t, index(t, decodeManifests(t)))
}

// checkWorkloadsSafe: every container runs as non-root, read-only, without
// privileges, with resource requests and a memory limit.
func checkWorkloadsSafe(t *testing.T, o objects) {
	t.Helper()
	for _, w := range o.workloads() {
		where := w.kind + " " + w.name
		ps := w.pod.Spec
		podNonRoot := ps.SecurityContext != nil && ps.SecurityContext.RunAsNonRoot != nil && *ps.SecurityContext.RunAsNonRoot
		if ps.SecurityContext != nil && ps.SecurityContext.RunAsUser != nil && *ps.SecurityContext.RunAsUser == 0 {
			t.Errorf("%s: pod runs as user 0", where)
		}
		if len(ps.InitContainers) > 0 {
			t.Errorf("%s: init containers are not expected", where)
		}
		for _, c := range ps.Containers {
			where := where + " container " + c.Name
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("%s: no securityContext", where)
				continue
			}
			nonRoot := podNonRoot || (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot)
			if !nonRoot || (sc.RunAsUser != nil && *sc.RunAsUser == 0) {
				t.Errorf("%s: not guaranteed to run as non-root (runAsNonRoot)", where)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: root filesystem not read-only", where)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: privilege escalation allowed", where)
			}
			if sc.Privileged != nil && *sc.Privileged {
				t.Errorf("%s: privileged", where)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s: capabilities not all dropped", where)
			}
			r := c.Resources
			if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
				t.Errorf("%s: resources %v, want cpu and memory requests and a memory limit", where, r)
			}
			if !r.Limits.Memory().IsZero() && r.Limits.Memory().Cmp(*r.Requests.Memory()) < 0 {
				t.Errorf("%s: memory limit below its request", where)
			}
			if c.Image == "" {
				t.Errorf("%s: no image", where)
			}
		}
	}
}

// names are the objects' names: the kustomization's, or a Helm release's.
type names struct{ api, worker, migrate, configMap string }

var kustomizeNames = names{api: apiName, worker: workerName, migrate: migrateName, configMap: configMap}

// roles says which workload runs which svcbridge command.
func (n names) roles() []struct{ kind, name, role string } {
	return []struct{ kind, name, role string }{
		{"Deployment", n.api, "api"},
		{"Deployment", n.worker, "worker"},
		{"Job", n.migrate, "migrate"},
	}
}

func TestWorkloadsRunTheirRole(t *testing.T) {
	o := index(t, decodeManifests(t))
	image := checkRoles(t, o, kustomizeNames)
	k := readKustomization(t)
	name, _, _ := strings.Cut(image, ":")
	found := false
	for _, im := range k.Images {
		found = found || im.Name == name
		if im.NewTag == "" || im.NewTag == "latest" {
			t.Errorf("kustomization.yaml: image %s tag %q; pin a version (IfNotPresent nodes keep whatever latest was)", im.Name, im.NewTag)
		}
	}
	if !found {
		t.Errorf("kustomization.yaml has no images entry for %s (where an operator sets the registry and tag)", name)
	}
}

// checkRoles: each role's workload runs its svcbridge command from one
// image, and each Deployment selects its own pods only. It returns the image.
func checkRoles(t *testing.T, o objects, n names) string {
	t.Helper()
	byName := map[string]workload{}
	for _, w := range o.workloads() {
		byName[w.name] = w
	}
	var image string
	for _, r := range n.roles() {
		w, ok := byName[r.name]
		if !ok || w.kind != r.kind {
			t.Errorf("no %s %s", r.kind, r.name)
			continue
		}
		if len(w.pod.Spec.Containers) != 1 {
			t.Errorf("%s: %d containers, want 1", r.name, len(w.pod.Spec.Containers))
			continue
		}
		c := w.pod.Spec.Containers[0]
		// The image's ENTRYPOINT is svcbridge: the role is the only argument.
		if len(c.Command) != 0 || !slices.Equal(c.Args, []string{r.role}) {
			t.Errorf("%s: command %q args %q, want the image's entrypoint with args [%s]", r.name, c.Command, c.Args, r.role)
		}
		if image == "" {
			image = c.Image
		} else if c.Image != image {
			t.Errorf("%s: image %s, want the same image as the other roles (%s)", r.name, c.Image, image)
		}
		if w.pod.Labels["app.kubernetes.io/component"] != r.role {
			t.Errorf("%s: pod label app.kubernetes.io/component=%q, want %s", r.name, w.pod.Labels["app.kubernetes.io/component"], r.role)
		}
	}
	for _, name := range []string{n.api, n.worker} {
		d := o.deployments[name]
		if d == nil {
			continue
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("%s: replicas %v, want 2 or more", name, d.Spec.Replicas)
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("%s: selector %v does not select its own pods %v (%v)", name, d.Spec.Selector, d.Spec.Template.Labels, err)
		}
		for _, other := range o.deployments {
			if other.Name != name && sel != nil && sel.Matches(labels.Set(other.Spec.Template.Labels)) {
				t.Errorf("%s: selector also selects the pods of %s", name, other.Name)
			}
		}
	}
	if j := o.jobs[n.migrate]; j != nil {
		if p := j.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
			t.Errorf("%s: restartPolicy %q", n.migrate, p)
		}
	}
	return image
}

func TestAPIProbesAndService(t *testing.T) {
	checkAPI(t, index(t, decodeManifests(t)), kustomizeNames)
}

// checkAPI: the api's probes and Service use the port LISTEN opens.
func checkAPI(t *testing.T, o objects, n names) {
	t.Helper()
	apiName, configMap := n.api, n.configMap
	d := o.deployments[apiName]
	if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("no Deployment %s with one container", apiName)
	}
	c := d.Spec.Template.Spec.Containers[0]
	// The container port is the one LISTEN opens.
	cm := o.configMaps[configMap]
	if cm == nil {
		t.Fatalf("no ConfigMap %s", configMap)
	}
	listen := cm.Data["LISTEN"]
	host, port, err := net.SplitHostPort(listen)
	if err != nil || (host != "0.0.0.0" && host != "" && host != "::") {
		t.Errorf("ConfigMap %s: LISTEN=%q, want all interfaces (0.0.0.0:PORT): a pod is reached on its IP", configMap, listen)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
		if fmt.Sprint(p.ContainerPort) != port {
			t.Errorf("%s: containerPort %d, but LISTEN is %s", apiName, p.ContainerPort, listen)
		}
	}
	httpProbe(t, apiName, "readinessProbe", c.ReadinessProbe, readinessURL, listen, c)
	// /readyz gives PostgreSQL and Temporal 3 s.
	if c.ReadinessProbe != nil && c.ReadinessProbe.TimeoutSeconds < 4 {
		t.Errorf("%s: readinessProbe timeout %ds, shorter than /readyz's own 3 s budget", apiName, c.ReadinessProbe.TimeoutSeconds)
	}
	httpProbe(t, apiName, "livenessProbe", c.LivenessProbe, livenessURL, listen, c)
	if c.StartupProbe != nil {
		httpProbe(t, apiName, "startupProbe", c.StartupProbe, livenessURL, listen, c)
	}

	svc := o.services[apiName]
	if svc == nil {
		t.Fatalf("no Service %s", apiName)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service %s selector %v does not select the api pods %v", apiName, svc.Spec.Selector, d.Spec.Template.Labels)
	}
	for _, w := range o.deployments {
		if w.Name != apiName && len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.Spec.Template.Labels)) {
			t.Errorf("Service %s also selects the pods of %s", apiName, w.Name)
		}
	}
	for _, p := range svc.Spec.Ports {
		n := p.TargetPort.IntVal
		if p.TargetPort.StrVal != "" {
			n = ports[p.TargetPort.StrVal]
		}
		if fmt.Sprint(n) != port {
			t.Errorf("Service %s: targetPort %s is not the API port %s", apiName, p.TargetPort.String(), port)
		}
	}
}

// httpProbe checks that p is an httpGet probe of path on the container
// port listen opens.
func httpProbe(t *testing.T, where, what string, p *corev1.Probe, path, listen string, c corev1.Container) {
	t.Helper()
	if p == nil {
		t.Errorf("%s: no %s", where, what)
		return
	}
	if p.HTTPGet == nil {
		t.Errorf("%s: %s is not an httpGet probe", where, what)
		return
	}
	if p.HTTPGet.Path != path {
		t.Errorf("%s: %s path %s, want %s", where, what, p.HTTPGet.Path, path)
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Errorf("%s: listen address %q: %v", where, listen, err)
		return
	}
	n := p.HTTPGet.Port.IntVal
	for _, cp := range c.Ports {
		if p.HTTPGet.Port.StrVal != "" && cp.Name == p.HTTPGet.Port.StrVal {
			n = cp.ContainerPort
		}
	}
	if fmt.Sprint(n) != port {
		t.Errorf("%s: %s port %s is not the port %s listens on", where, what, p.HTTPGet.Port.String(), listen)
	}
}

// envValue is the value a container's env sets, or its ConfigMap gives.
func envValue(c corev1.Container, o objects, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil && o.configMaps[ef.ConfigMapRef.Name] != nil {
			if v, ok := o.configMaps[ef.ConfigMapRef.Name].Data[strings.TrimPrefix(name, ef.Prefix)]; ok {
				return v
			}
		}
	}
	return ""
}

// The worker serves /healthz and /metrics on METRICS_LISTEN, for its
// liveness probe (no readiness: nothing is routed to it), and runs as the
// ServiceAccount rbac.yaml binds, the only workload that needs the
// Kubernetes API.
func TestWorkerProbeAndServiceAccount(t *testing.T) {
	checkWorker(t, index(t, decodeManifests(t)), kustomizeNames)
}

// checkWorker: the worker's probes, ServiceAccount and Role, no token for
// the other workloads, and PodDisruptionBudgets of one Deployment each.
func checkWorker(t *testing.T, o objects, n names) {
	t.Helper()
	workerName := n.worker
	d := o.deployments[workerName]
	if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("no Deployment %s with one container", workerName)
	}
	c := d.Spec.Template.Spec.Containers[0]
	listen := envValue(c, o, "METRICS_LISTEN")
	if !strings.HasPrefix(listen, "0.0.0.0:") {
		t.Errorf("%s: METRICS_LISTEN=%q, want 0.0.0.0:PORT (the kubelet probes the pod IP)", workerName, listen)
	}
	httpProbe(t, workerName, "livenessProbe", c.LivenessProbe, livenessURL, listen, c)
	if c.StartupProbe != nil {
		httpProbe(t, workerName, "startupProbe", c.StartupProbe, livenessURL, listen, c)
	}
	if c.ReadinessProbe != nil {
		t.Errorf("%s: a readinessProbe, but no traffic is routed to workers", workerName)
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	if sa == "" || o.accounts[sa] == nil {
		t.Fatalf("%s: serviceAccountName %q is not a ServiceAccount of the manifests", workerName, sa)
	}
	bound := false
	for _, b := range o.bindings {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa {
				bound = true
				if b.RoleRef.Kind == "Role" && o.roles[b.RoleRef.Name] == nil {
					t.Errorf("RoleBinding %s refers to Role %s, which no manifest defines", b.Name, b.RoleRef.Name)
				}
			}
		}
	}
	if !bound {
		t.Errorf("no RoleBinding binds ServiceAccount %s", sa)
	}
	// The others get no token at all.
	for _, w := range o.workloads() {
		if w.name == workerName {
			continue
		}
		if a := w.pod.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s %s: mounts a service account token it does not need (automountServiceAccountToken: false)", w.kind, w.name)
		}
	}
	for _, p := range o.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		matched := 0
		for _, d := range o.deployments {
			if err == nil && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				matched++
			}
		}
		if matched != 1 {
			t.Errorf("PodDisruptionBudget %s selects %d Deployments, want 1", p.Name, matched)
		}
	}
}

// TestManifestsUseDocumentedSettings: every environment variable a
// svcbridge container gets is a setting of the README's table, with a
// value the binary accepts, and DATABASE_URL comes from a Secret.
func TestManifestsUseDocumentedSettings(t *testing.T) {
	checkEnv(t, index(t, decodeManifests(t)), readKustomization(t).Namespace)
}

// checkEnv: every environment variable of every container is a setting of
// the README's table, resolved (ConfigMaps, Secrets, the pod's namespace)
// as the kubelet would, and svcbridge starts with them.
func checkEnv(t *testing.T, o objects, namespace string) {
	t.Helper()
	docs := documented(t)
	for _, w := range o.workloads() {
		for _, c := range w.pod.Spec.Containers {
			where := w.kind + " " + w.name
			values := map[string]string{}
			for _, ef := range c.EnvFrom {
				switch {
				case ef.ConfigMapRef != nil:
					cm := o.configMaps[ef.ConfigMapRef.Name]
					if cm == nil {
						t.Errorf("%s: envFrom ConfigMap %s is not among the manifests", where, ef.ConfigMapRef.Name)
						continue
					}
					for k, v := range cm.Data {
						values[ef.Prefix+k] = v
					}
				case ef.SecretRef != nil:
					sec := o.secrets[ef.SecretRef.Name]
					if sec == nil {
						t.Errorf("%s: envFrom Secret %s has no example manifest", where, ef.SecretRef.Name)
						continue
					}
					for k, v := range sec.StringData {
						values[ef.Prefix+k] = v
					}
				}
			}
			for _, e := range c.Env {
				switch {
				case e.ValueFrom == nil:
					values[e.Name] = e.Value
				case e.ValueFrom.SecretKeyRef != nil:
					ref := e.ValueFrom.SecretKeyRef
					sec := o.secrets[ref.Name]
					if sec == nil {
						t.Errorf("%s: env %s from Secret %s, which has no example manifest", where, e.Name, ref.Name)
						continue
					}
					v, ok := sec.StringData[ref.Key]
					if !ok {
						t.Errorf("%s: env %s from key %s of Secret %s, which the example lacks", where, e.Name, ref.Key, ref.Name)
					}
					values[e.Name] = v
				case e.ValueFrom.ConfigMapKeyRef != nil:
					ref := e.ValueFrom.ConfigMapKeyRef
					cm := o.configMaps[ref.Name]
					if cm == nil {
						t.Errorf("%s: env %s from ConfigMap %s, which is not among the manifests", where, e.Name, ref.Name)
						continue
					}
					values[e.Name] = cm.Data[ref.Key]
				case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
					values[e.Name] = namespace
				default:
					values[e.Name] = "from-the-pod" // other field and resource refs
				}
			}
			var names []string
			for n := range values {
				names = append(names, n)
				if !docs[n] {
					t.Errorf("%s: environment variable %s is not a setting of the README's configuration table", where, n)
				}
			}
			for _, need := range []string{databaseEnv, "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TASK_QUEUE", "CONTROL_PLANE"} {
				if _, ok := values[need]; !ok {
					t.Errorf("%s: %s is not set (has %v)", where, need, names)
				}
			}
			if inConfigMap(c, o) {
				t.Errorf("%s: %s comes from a ConfigMap; it holds a password, take it from a Secret", where, databaseEnv)
			}
			checkSettings(t, where, values)
		}
	}
	for name, sec := range o.secrets {
		if v := sec.StringData[databaseEnv]; v != "" && !strings.Contains(v, "CHANGE-ME") {
			t.Errorf("Secret %s: %s is not an obvious placeholder (CHANGE-ME)", name, databaseEnv)
		}
	}
}

// inConfigMap reports whether the container's DATABASE_URL can come from a
// ConfigMap.
func inConfigMap(c corev1.Container, o objects) bool {
	for _, e := range c.Env {
		if e.Name == databaseEnv {
			return e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef != nil
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			if cm := o.configMaps[ef.ConfigMapRef.Name]; cm != nil {
				if _, ok := cm.Data[strings.TrimPrefix(databaseEnv, ef.Prefix)]; ok {
					return true
				}
			}
		}
	}
	return false
}

// ---- Docker Compose ----

func readCompose(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return doc
}

// TestComposeMatchesTheSpecSchema validates docker-compose.yml against the
// Compose specification's JSON schema, as `docker compose config` does
// before anything else (compose-go's schema package: the schema Docker
// Compose embeds).
func TestComposeMatchesTheSpecSchema(t *testing.T) {
	if err := schema.Validate(readCompose(t)); err != nil {
		t.Errorf("docker-compose.yml does not match the Compose specification: %v", err)
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// loadCompose reads docker-compose.yml typed and interpolated, as the
// production rehearsal (systemtest) does.
func loadCompose(t *testing.T) compose.File {
	t.Helper()
	f, err := compose.Load(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

func TestComposeServices(t *testing.T) {
	doc := readCompose(t)
	file := loadCompose(t)
	services := asMap(doc["services"])
	docs := documented(t)
	for _, want := range []string{"postgres", "temporal", "temporal-ui", migrateName, apiName, workerName} {
		if services[want] == nil {
			t.Errorf("docker-compose.yml has no service %s", want)
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range services {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		svc := asMap(services[name])
		// depends_on: every target exists; a condition is one the target can meet.
		for target, cond := range asMap(svc["depends_on"]) {
			tsvc := asMap(services[target])
			if tsvc == nil {
				t.Errorf("%s depends on %s, which is not a service", name, target)
				continue
			}
			switch c := asMap(cond)["condition"]; c {
			case "service_healthy":
				if hc := asMap(tsvc["healthcheck"]); hc == nil || hc["test"] == nil || hc["disable"] == true {
					t.Errorf("%s waits for %s to be healthy, but %s has no healthcheck", name, target, target)
				}
			case "service_completed_successfully":
				if r := fmt.Sprint(tsvc["restart"]); r == "always" || r == "unless-stopped" {
					t.Errorf("%s waits for %s to complete, but %s restarts %s", name, target, target, r)
				}
			case "service_started":
			default:
				t.Errorf("%s depends on %s without a condition (%v): it would start before %s is ready", name, target, c, target)
			}
		}
		// Images are pinned, except svcbridge's own, built here.
		image := fmt.Sprint(svc["image"])
		if svc["build"] == nil {
			_, tag, ok := strings.Cut(image, ":")
			if !ok || tag == "latest" || tag == "" {
				t.Errorf("%s: image %s is not pinned to a version", name, image)
			}
		}
	}
	for _, name := range []string{"postgres", "temporal", apiName} {
		if hc := asMap(asMap(services[name])["healthcheck"]); hc == nil || hc["test"] == nil {
			t.Errorf("%s has no healthcheck", name)
		}
	}
	// One Temporal release: the schema the admin-tools image sets up is the
	// server's, and the rehearsal (systemtest) runs that release's binaries.
	serverTag := ""
	if _, tag, ok := strings.Cut(file.Services["temporal"].Image, ":"); ok {
		serverTag = tag
	}
	for _, name := range []string{"temporal", "temporal-schema", "temporal-namespace"} {
		if svc, ok := file.Services[name]; ok {
			_, tag, _ := strings.Cut(svc.Image, ":")
			// The Temporal server svcbridge is built and tested against.
			if !strings.HasPrefix(tag, "1.31.") {
				t.Errorf("%s: image %v, want a 1.31.x release (go.temporal.io/server v1.31)", name, svc.Image)
			}
			if tag != serverTag {
				t.Errorf("%s: image %v, want the temporal service's release %s", name, svc.Image, serverTag)
			}
		}
	}

	// svcbridge's services: one image, their role, documented settings only.
	var image string
	for _, r := range []struct{ name, role string }{{migrateName, "migrate"}, {apiName, "api"}, {workerName, "worker"}} {
		svc := asMap(services[r.name])
		if svc == nil {
			continue
		}
		if image == "" {
			image = fmt.Sprint(svc["image"])
		} else if fmt.Sprint(svc["image"]) != image {
			t.Errorf("%s: image %v, want %s as the other svcbridge services", r.name, svc["image"], image)
		}
		if cmd, _ := svc["command"].([]any); len(cmd) != 1 || cmd[0] != r.role {
			t.Errorf("%s: command %v, want [%s]", r.name, svc["command"], r.role)
		}
		if svc["entrypoint"] != nil {
			t.Errorf("%s: entrypoint overridden; the image's is svcbridge", r.name)
		}
		values := file.Services[r.name].Environment
		for k := range values {
			if !docs[k] {
				t.Errorf("%s: environment variable %s is not a setting of the README's configuration table", r.name, k)
			}
		}
		for _, need := range []string{databaseEnv, "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TASK_QUEUE", "CONTROL_PLANE"} {
			if values[need] == "" {
				t.Errorf("%s: %s not set", r.name, need)
			}
		}
		checkSettings(t, r.name, values)
		// The addresses name services of this file.
		if u, err := url.Parse(values[databaseEnv]); err != nil || services[u.Hostname()] == nil {
			t.Errorf("%s: %s host is not a service of the file (%q)", r.name, databaseEnv, values[databaseEnv])
		}
		if host, port, err := net.SplitHostPort(values["TEMPORAL_ADDRESS"]); err != nil || services[host] == nil || port != "7233" {
			t.Errorf("%s: TEMPORAL_ADDRESS %q is not the temporal service's frontend", r.name, values["TEMPORAL_ADDRESS"])
		}
		deps := asMap(svc["depends_on"])
		if deps["postgres"] == nil && deps[migrateName] == nil {
			t.Errorf("%s does not wait for PostgreSQL (or %s)", r.name, migrateName)
		}
		if r.name != migrateName && (deps[migrateName] == nil || deps["temporal"] == nil) {
			t.Errorf("%s does not wait for %s and temporal", r.name, migrateName)
		}
	}

	api := asMap(services[apiName])
	listen := file.Services[apiName].Environment["LISTEN"]
	_, port, err := net.SplitHostPort(listen)
	if err != nil || !strings.HasPrefix(listen, "0.0.0.0:") {
		t.Errorf("%s: LISTEN=%q, want 0.0.0.0:PORT (reachable from other containers)", apiName, listen)
	}
	published := false
	for _, p := range api["ports"].([]any) {
		published = published || strings.HasSuffix(fmt.Sprint(p), ":"+port)
	}
	if !published {
		t.Errorf("%s: ports %v do not publish the LISTEN port %s", apiName, api["ports"], port)
	}
	if test := fmt.Sprint(asMap(api["healthcheck"])["test"]); !strings.Contains(test, ":"+port+readinessURL) {
		t.Errorf("%s: healthcheck %s does not check %s on port %s", apiName, test, readinessURL, port)
	}
	worker := asMap(services[workerName])
	mlisten := file.Services[workerName].Environment["METRICS_LISTEN"]
	if _, mport, err := net.SplitHostPort(mlisten); err != nil || !strings.HasPrefix(mlisten, "0.0.0.0:") {
		t.Errorf("%s: METRICS_LISTEN=%q, want 0.0.0.0:PORT", workerName, mlisten)
	} else if test := fmt.Sprint(asMap(worker["healthcheck"])["test"]); !strings.Contains(test, ":"+mport+livenessURL) {
		t.Errorf("%s: healthcheck %s does not check %s on port %s", workerName, test, livenessURL, mport)
	}
	if r := asMap(worker["deploy"])["replicas"]; r != 2 {
		t.Errorf("%s: deploy.replicas %v, want 2", workerName, r)
	}
	if worker["container_name"] != nil {
		t.Errorf("%s: container_name prevents replicas", workerName)
	}
	ui := asMap(services["temporal-ui"])
	if host, port, err := net.SplitHostPort(file.Services["temporal-ui"].Environment["TEMPORAL_ADDRESS"]); err != nil || services[host] == nil || port != "7233" {
		t.Errorf("temporal-ui: TEMPORAL_ADDRESS does not name the temporal service")
	}
	for _, p := range ui["ports"].([]any) {
		if !strings.HasPrefix(fmt.Sprint(p), "127.0.0.1:") {
			t.Errorf("temporal-ui publishes %v beyond loopback; the Web UI has no authentication", p)
		}
	}
}

// TestComposeConnectionBudget: every process the file starts may hold its
// whole pool at once (a burst, a slow database) and PostgreSQL still
// accepts them all, one-shot jobs included (a second `up` runs them beside
// the rest). systemtest's rehearsal measures the pools against this sum.
func TestComposeConnectionBudget(t *testing.T) {
	b, err := loadCompose(t).Connections()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, d := range b.Draws {
		lines = append(lines, fmt.Sprintf("%s: %d x %d (%s)", d.Service, d.Processes, d.PerProcess, d.Why))
	}
	t.Logf("PostgreSQL: %d of %d connections (max_connections %d, %d for superusers):\n  %s",
		b.Needed(), b.Available(), b.MaxConnections, b.Reserved, strings.Join(lines, "\n  "))
	if b.Needed() > b.Available() {
		t.Errorf("the processes of docker-compose.yml may open %d connections, PostgreSQL accepts %d: lower their pools or raise max_connections", b.Needed(), b.Available())
	}
	// The file's services that reach PostgreSQL all count.
	for _, want := range []string{"temporal", "temporal-schema", migrateName, apiName, workerName} {
		if !slices.ContainsFunc(b.Draws, func(d compose.Draw) bool { return d.Service == want }) {
			t.Errorf("the budget does not count %s", want)
		}
	}
}

// ---- Dockerfile and .dockerignore ----

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Instructions, with continuation lines joined and comments dropped.
	var ins []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "#") || (l == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		cur.WriteString(l)
		if s := strings.TrimSpace(cur.String()); s != "" {
			ins = append(ins, s)
		}
		cur.Reset()
	}
	var froms []string
	var final []string // instructions of the last stage
	for _, in := range ins {
		if strings.HasPrefix(in, "FROM ") {
			froms = append(froms, in)
			final = nil
		}
		final = append(final, in)
	}
	if len(froms) < 2 || !regexp.MustCompile(`^FROM golang:1\.26(\.\d+)?\S* AS \w+`).MatchString(froms[0]) {
		t.Fatalf("want a multi-stage build from golang:1.26 first; FROMs: %q", froms)
	}
	last := froms[len(froms)-1]
	if !strings.Contains(last, "gcr.io/distroless/static") && last != "FROM scratch" {
		t.Errorf("final stage %q, want distroless static or scratch (a static binary needs nothing else)", last)
	}
	joined := strings.Join(ins, "\n")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w`, "./cmd/svcbridge", "./deploy/probe",
		"ARG VERSION", `-X svcbridge/buildinfo.release=$version"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("the build does not use %s", want)
		}
	}
	checkDockerVersion(t, joined)
	var user, entry, cmd string
	for _, in := range final {
		switch k, v, _ := strings.Cut(in, " "); k {
		case "USER":
			user = v
		case "ENTRYPOINT":
			entry = v
		case "CMD":
			cmd = v
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if user == "" || uid == "0" || uid == "root" {
		t.Errorf("final stage USER %q, want a non-root user", user)
	}
	if !strings.Contains(last, "nonroot") && uid != "65532" && uid != "nonroot" {
		t.Errorf("final stage USER %q on %q: distroless's non-root user is 65532", user, last)
	}
	if !regexp.MustCompile(`^\["[^"]*/svcbridge"\]$`).MatchString(entry) {
		t.Errorf("ENTRYPOINT %s, want [\".../svcbridge\"] in exec form", entry)
	}
	if cmd != `["api"]` {
		t.Errorf("CMD %s, want [\"api\"]", cmd)
	}
}

// checkDockerVersion runs the build's version assignment as the image's
// shell would: the binary is stamped with --build-arg VERSION, else with
// the chart's appVersion (the tag the chart deploys), never left "devel".
func checkDockerVersion(t *testing.T, build string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)(version="\$\{VERSION:-.*?\}") &&`).FindStringSubmatch(build)
	if m == nil {
		t.Fatal(`the build does not set version="${VERSION:-...}"`)
	}
	chart, err := os.ReadFile(filepath.Join(root, "deploy/helm/svcbridge/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	app := regexp.MustCompile(`(?m)^appVersion: *"?([^"\s]+)"?`).FindSubmatch(chart)
	if app == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	for arg, want := range map[string]string{"": string(app[1]), "2.3.4": "2.3.4"} {
		cmd := exec.Command("sh", "-c", m[1]+` && printf %s "$version"`)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "VERSION="+arg)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("with VERSION=%q the image's binary is stamped %q (%v), want %q", arg, out, err, want)
		}
	}
}

// dockerignored reports whether Docker leaves path (slash-separated,
// relative to the context) out of the build context: a pattern matches the
// path or one of its parent directories. Exceptions (!) are not used here.
func dockerignored(patterns []string, path string) bool {
	for _, p := range patterns {
		p = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/")
		for dir := path; dir != "." && dir != "/"; dir = filepath.Dir(dir) {
			if ok, _ := filepath.Match(p, dir); ok {
				return true
			}
		}
	}
	return false
}

// TestDockerignoreKeepsTheBuildInputs: every package (and embedded file)
// the image's two binaries are built from is in the build context.
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") || strings.Contains(l, "**") {
			t.Fatalf(".dockerignore: %q: exceptions and ** are beyond this test's matcher", l)
		}
		patterns = append(patterns, l)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}`,
		"./cmd/svcbridge", "./deploy/probe")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list with CGO_ENABLED=0 (as the image builds): %v\n%s", err, out)
	}
	needed := []string{"go.mod", "go.sum"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		rel, err := filepath.Rel(abs, fields[0])
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // the standard library or the module cache
		}
		for _, f := range fields[1:] {
			needed = append(needed, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, p := range needed {
		if dockerignored(patterns, p) {
			t.Errorf(".dockerignore excludes %s, which the image build needs", p)
		}
	}
	// And it keeps out what would make the context huge or leak data.
	for _, p := range []string{".git/config", "svcbridge", ".svcbridge/svcbridge.db"} {
		if !dockerignored(patterns, p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
}
