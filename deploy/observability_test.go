package deploy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"

	"svcbridge/metrics"
	"svcbridge/metrics/promtest"
	"svcbridge/store"
)

const (
	alertsFile    = "observability/alerts.yaml"
	alertTests    = "observability/alerts.test.yaml"
	dashboardFile = "observability/dashboard.json"
	runbookFile   = "../docs/runbook.md"
	// runbookPlaceholder is the address of docs/runbook.md in alertsFile's
	// runbook_url, which the operator replaces (docs/observability.md says
	// how) and the chart replaces with metrics.prometheusRule.runbookURL.
	runbookPlaceholder = "https://runbook.example/svcbridge/runbook.md"
)

var promql = parser.NewParser(parser.Options{})

// parseRules parses a rule file with Prometheus' own parser and validator
// (unknown fields, bad PromQL, bad templates are errors), the code
// `promtool check rules` and Prometheus itself run. It is the heaviest
// dependency of these tests (rulefmt pulls the PromQL engine, about 70
// packages, and the prometheus module raised some of the module's
// versions); the issue asks for it, and it also gives the PromQL parser
// the dashboard's queries are read with.
func parseRules(t *testing.T, where string, content []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", where, err)
	}
	if groups == nil {
		t.FailNow()
	}
	return groups
}

// metricNames are the metric names a PromQL expression selects.
func metricNames(t *testing.T, where, expr string) []string {
	t.Helper()
	// Grafana's interval variables are not PromQL.
	expr = regexp.MustCompile(`\$__(rate_interval|interval|range)`).ReplaceAllString(expr, "5m")
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q: %v", where, expr, err)
		return nil
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs.Name)
		}
		return nil
	})
	return out
}

// fixedCounts stands for the store behind the scrape-time gauges.
type fixedCounts struct{}

func (fixedCounts) Counts(context.Context) (store.Counts, error) { return store.Counts{}, nil }

// exported are the names of the series svcbridge serves at /metrics (a
// histogram's _bucket, _sum and _count), from the metrics package's own
// registry. Temporal SDK metrics are left out: the dashboard and the rules
// use svcbridge's own.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	stop := metrics.Watch(metrics.Source{Store: fixedCounts{},
		Pollers: func(context.Context) (int, error) { return 1, nil }, TaskQueue: "q"})
	defer stop()
	// Status codes are open-ended: this vector has no series before a request.
	metrics.HTTPRequests.WithLabelValues("GET", "/healthz", "200")
	metrics.InitRoute("GET", "/healthz") // as the API does for each of its routes
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		out[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		}
	}
	return out
}

// checkMetricsExist reports every metric an expression names that
// svcbridge does not export, and returns the names.
func checkMetricsExist(t *testing.T, where, expr string, have map[string]bool) []string {
	t.Helper()
	names := metricNames(t, where, expr)
	if len(names) == 0 {
		t.Errorf("%s: %q names no metric", where, expr)
	}
	for _, n := range names {
		if !have[n] {
			t.Errorf("%s: %q uses %s, which svcbridge does not export", where, expr, n)
		}
	}
	return names
}

// headingPunct is what GitHub drops of a heading to make its anchor.
var headingPunct = regexp.MustCompile(`[^a-z0-9 _-]`)

// anchor is the GitHub anchor of a Markdown heading.
func anchor(heading string) string {
	return strings.ReplaceAll(headingPunct.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), ""), " ", "-")
}

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			out[anchor(strings.TrimLeft(h, "#"))] = true
		}
	}
	return out
}

// checkRunbookURLs: every alert's runbook_url is an absolute http(s) URL,
// page#anchor, where anchor is the alert's own section of docs/runbook.md
// and that section exists.
func checkRunbookURLs(t *testing.T, where string, groups *rulefmt.RuleGroups, page string) {
	t.Helper()
	runbook := anchors(t, runbookFile)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			link := r.Annotations["runbook_url"]
			u, err := url.Parse(link)
			switch {
			case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
				t.Errorf("%s: %s: runbook_url %q is not an absolute http(s) URL", where, r.Alert, link)
			case link != page+"#"+u.Fragment:
				t.Errorf("%s: %s: runbook_url %q is not on %s", where, r.Alert, link, page)
			case u.Fragment != anchor(r.Alert):
				t.Errorf("%s: %s: runbook_url %q links to #%s, not the alert's section #%s", where, r.Alert, link, u.Fragment, anchor(r.Alert))
			case !runbook[u.Fragment]:
				t.Errorf("%s: %s: runbook_url %q: %s has no section #%s", where, r.Alert, link, runbookFile, u.Fragment)
			}
		}
	}
}

// TestAlertRules: the rules parse with Prometheus' rule parser, alert on
// what the issue asks, use only metrics svcbridge exports (in their
// expressions and in their annotations' queries) and link to their runbook
// section, which exists, at the placeholder address docs/observability.md
// tells the operator to replace.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	groups := parseRules(t, alertsFile, b)
	checkRunbookURLs(t, alertsFile, groups, runbookPlaceholder)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), runbookPlaceholder) {
		t.Errorf("docs/observability.md does not say to replace %s, the rules' runbook address", runbookPlaceholder)
	}
	have := exported(t)
	query := regexp.MustCompile(`query "([^"]+)"`)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			where := alertsFile + ": " + r.Alert
			alerts = append(alerts, r.Alert)
			checkMetricsExist(t, where, r.Expr, have)
			for _, text := range r.Annotations {
				for _, m := range query.FindAllStringSubmatch(text, -1) {
					checkMetricsExist(t, where+" (annotation)", m[1], have)
				}
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: no severity label or summary", where)
			}
		}
	}
	for _, want := range []string{"SvcbridgeServicesFailed", "SvcbridgeAgentsNotAcknowledging", "SvcbridgeWorkerNotPolling", "SvcbridgeDriftRepairs"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("%s has no alert %s (has %v)", alertsFile, want, alerts)
		}
	}
}

// TestAlertRuleUnitTests runs promtool's unit tests of the rules
// (observability/alerts.test.yaml, beside the rule file the chart
// includes): each alert fires on the series that must fire it, with its
// annotations rendered as written there, and stays quiet on the series
// that must not. Every alert has both kinds of case.
func TestAlertRuleUnitTests(t *testing.T) {
	b, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatalf("%s: %v", alertTests, err)
	}
	if !slices.Equal(file.RuleFiles, []string{filepath.Base(alertsFile)}) {
		t.Errorf("%s tests %v, want the chart's rules through %s", alertTests, file.RuleFiles, alertsFile)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	rules, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range parseRules(t, alertsFile, rules).Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: %s has a case that fires it: %v, one that must not: %v; want both", alertTests, r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}

	cmd := exec.Command(promtest.Tool(t, "promtool"), "test", "rules", filepath.Base(alertTests))
	cmd.Dir = filepath.Dir(alertTests)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", alertTests, err, out)
	}
}

// grafanaPanel is the part of a Grafana panel this test reads.
type grafanaPanel struct {
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

// TestDashboard: every query of the Grafana dashboard parses as PromQL and
// names metrics svcbridge exports, and the dashboard shows what the issue
// lists.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string         `json:"title"`
		UID        string         `json:"uid"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type string
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Errorf("%s: no title or uid", dashboardFile)
	}
	if !slices.ContainsFunc(dash.Templating.List, func(v struct{ Name, Type string }) bool { return v.Type == "datasource" }) {
		t.Errorf("%s: no datasource variable: the dashboard would be bound to one Prometheus", dashboardFile)
	}
	have := exported(t)
	used := map[string]bool{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource %v, want the ${datasource} variable", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				for _, n := range checkMetricsExist(t, "panel "+p.Title, tg.Expr, have) {
					used[n] = true
				}
			}
		}
	}
	walk(dash.Panels)
	for _, want := range []string{
		"svcbridge_service_ready_seconds_bucket",         // create → ready latency
		"svcbridge_service_reconciles_total",             // reconcile outcomes
		"svcbridge_services",                             // failed services
		"svcbridge_fanout_agents_bucket",                 // fan-out size
		"svcbridge_fanout_batch_seconds_bucket",          // fan-out duration
		"svcbridge_agents_unacknowledged",                // agents not acknowledging
		"svcbridge_drift_repairs_total",                  // drift repairs
		"svcbridge_http_request_duration_seconds_bucket", // API latency by route
		"svcbridge_task_queue_pollers",                   // worker health
	} {
		if !used[want] {
			t.Errorf("%s shows nothing of %s", dashboardFile, want)
		}
	}
}

// TestDocsListTheMetrics: the metrics table of docs/observability.md lists
// exactly the svcbridge metrics /metrics serves.
func TestDocsListTheMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(string(b), "\n## ")
	documented := map[string]bool{}
	name := regexp.MustCompile("`(svcbridge_[a-z_]+)`")
	for _, line := range strings.Split(section, "\n") {
		if first, _, ok := strings.Cut(strings.TrimPrefix(line, "|"), "|"); ok && strings.HasPrefix(line, "|") {
			for _, m := range name.FindAllStringSubmatch(first, -1) {
				documented[m[1]] = true
			}
		}
	}
	for n := range exported(t) {
		if strings.HasPrefix(n, metrics.Namespace+"_") && !strings.HasSuffix(n, "_bucket") && !strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") {
			if !documented[n] {
				t.Errorf("docs/observability.md's metrics table does not list %s", n)
			}
			delete(documented, n)
		}
	}
	for n := range documented {
		t.Errorf("docs/observability.md's metrics table lists %s, which svcbridge does not export", n)
	}
}
