package cli

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// vendorDoc adds an external service on the hub to fleetDoc.
const vendorDoc = `---
kind: Service
metadata: {name: vendor}
spec: {type: external, resource: 203.0.113.10, targetPort: 443}
`

// ages blanks the AGE column's values, which depend on the clock.
var ages = regexp.MustCompile(`  \d+s( |$)`)

func noAges(s string) string { return ages.ReplaceAllString(s, "  0s$1") }

// get KIND1,KIND2 prints each kind's table in turn, naming the objects
// kind/name, as kubectl does; the other formats print every kind's
// objects together, and -o yaml of them applies back unchanged.
func TestCLIGetSeveralKinds(t *testing.T) {
	f := newFleet(t)
	f.must(0, "apply", "-f", f.file("fleet.yaml", fleetDoc+vendorDoc), "--wait")
	out, _ := f.must(0, "get", "svc,agents")
	want := "" +
		"NAME              TYPE          BACKEND               BRIDGE-PORT  ENDPOINT               STATUS  AGE\n" +
		"service/checkout  microservice  orders/checkout:8080  10024        hub.example.com:10024  ready   0s\n" +
		"service/vendor    external      203.0.113.10:443      10025        hub.example.com:10025  ready   0s\n" +
		"\n" +
		"NAME         ROUTER-MODE  HOST             DEFAULT-ROUTER  TAGS                             AGE\n" +
		"agent/fog-a  edge         -                no              service.iofog.org/tag: checkout  0s\n" +
		"agent/hub    interior     hub.example.com  yes             -                                0s\n"
	if noAges(out) != want {
		t.Errorf("get svc,agents:\n%s\nwant:\n%s", out, want)
	}
	// One kind's table is as it was: names without their kind.
	if out, _ = f.must(0, "get", "agents", "--no-headers"); !strings.HasPrefix(out, "fog-a  ") {
		t.Errorf("get agents:\n%s", out)
	}
	if out, _ = f.must(0, "get", "ms,svc", "-o", "name"); out != "microservice/orders/checkout\nservice/checkout\nservice/vendor\n" {
		t.Errorf("get ms,svc -o name:\n%s", out)
	}
	// A name is looked for in each kind; what is missing is an error.
	out, stderr := f.must(ExitRejected, "get", "svc,agents", "hub", "--no-headers")
	if noAges(out) != "agent/hub  interior  hub.example.com  yes  -  0s\n" || stderr != "error: Service with name hub not found (404 NotFoundError)\n" {
		t.Errorf("get svc,agents hub:\n%s%s", out, stderr)
	}
	out, _ = f.must(0, "get", "agents,ms,svc", "-o", "yaml")
	if strings.Count(out, "\n    kind: ") != 5 || !strings.HasPrefix(out, "apiVersion: iofog.org/v3\nkind: List\nitems:\n") {
		t.Errorf("get agents,ms,svc -o yaml:\n%s", out)
	}
	if out, _ = f.must(0, "apply", "-f", f.file("all.yaml", out)); out != "agent/fog-a unchanged\nagent/hub unchanged\nmicroservice/orders/checkout unchanged\nservice/checkout unchanged\nservice/vendor unchanged\n" {
		t.Errorf("apply of get agents,ms,svc -o yaml:\n%s", out)
	}
	for _, args := range [][]string{{"get", "svc,widgets"}, {"get", "svc,agents", "-w"}, {"get", "svc,agents", "-l", "checkout"}} {
		f.must(ExitOther, args...)
	}
}

// -o jsonpath= and -o custom-columns= are kubectl's, on the objects as the
// API answers them.
func TestCLIGetJSONPathAndCustomColumns(t *testing.T) {
	f := newFleet(t)
	f.must(0, "apply", "-f", f.file("fleet.yaml", fleetDoc+vendorDoc), "--wait")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "svc", "-o", "jsonpath={.items[*].name}"}, "checkout vendor"},
		{[]string{"get", "svc", "checkout", "-o", "jsonpath={.bridgePort} {.distribution[*].agentName}"}, "10024 fog-a hub"},
		{[]string{"get", "svc", "-o", `jsonpath={range .items[*]}{.name}{"\t"}{.bridgePort}{"\n"}{end}`}, "checkout\t10024\nvendor\t10025\n"},
		{[]string{"get", "svc", "-o", "jsonpath={.items[?(@.bridgePort==10025)].resource}"}, "203.0.113.10"},
		{[]string{"get", "svc", "-o", "jsonpath={.items[*].nothing}"}, ""},
		{[]string{"get", "svc,agents", "-o", "jsonpath={.items[*].name}"}, "checkout vendor fog-a hub"},
		{[]string{"get", "svc", "-o", "custom-columns=NAME:.name,PORT:.bridgePort,TAGS:.tags[*],ERROR:{.provisioningError}"},
			"NAME      PORT   TAGS      ERROR\ncheckout  10024  checkout  <none>\nvendor    10025  <none>    <none>\n"},
		{[]string{"get", "svc", "checkout", "-o", "custom-columns=NAME:name,AGENTS:.distribution[*].agentName", "--no-headers"}, "checkout  fog-a,hub\n"},
		{[]string{"get", "svc,agents", "--sort-by", ".name", "-o", "custom-columns=NAME:.name,MODE:.routerMode"},
			"NAME      MODE\ncheckout  <none>\nvendor    <none>\nfog-a     edge\nhub       interior\n"},
	} {
		if out, _ := f.must(0, c.args...); out != c.want {
			t.Errorf("%s:\n%q\nwant\n%q", strings.Join(c.args, " "), out, c.want)
		}
	}
	for _, c := range []struct {
		format, err string
	}{
		{"jsonpath", "error: -o jsonpath needs a template: -o jsonpath='{.items[*].name}'\n"},
		{"jsonpath={.items[*", "error: -o jsonpath: unterminated array\n"},
		{"custom-columns=NAME", "error: -o custom-columns: unexpected column \"NAME\", want HEADER:PATH (NAME:.name)\n"},
		{"custom-columns=", "error: -o custom-columns needs columns: -o custom-columns=NAME:.name,PORT:.bridgePort\n"},
		{"jsonpaths={.name}", "error: invalid --output \"jsonpaths={.name}\": want one of wide, json, yaml, name, jsonpath=TEMPLATE, custom-columns=SPEC\n"},
	} {
		if _, stderr := f.must(ExitOther, "get", "svc", "-o", c.format); stderr != c.err {
			t.Errorf("-o %s: %q, want %q", c.format, stderr, c.err)
		}
	}
	// describe takes neither.
	f.must(ExitOther, "describe", "svc", "checkout", "-o", "jsonpath={.name}")
}

// get -w -o jsonpath|custom-columns prints each change through the
// template.
func TestCLIGetWatchThroughATemplate(t *testing.T) {
	for _, c := range []struct {
		format, want string
	}{
		{`jsonpath={.name} {.bridgePort}{"\n"}`, "checkout 10024\nvendor 10025\nweb 10026\n"},
		{"custom-columns=NAME:.name,PORT:.bridgePort", "EVENT     NAME      PORT\nADDED     checkout  10024\nADDED     vendor    10025\nADDED     web       10026\n"},
	} {
		f := newFleet(t)
		f.must(0, "apply", "-f", f.file("fleet.yaml", fleetDoc+vendorDoc), "--wait")
		tmpl, err := parseTemplateOutput(c.format)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := &linesUntil{lines: strings.Count(c.want, "\n"), done: cancel}
		web := f.file("web.yaml", "kind: Service\nmetadata: {name: web}\nspec: {type: external, resource: 203.0.113.11, targetPort: 80}\n")
		applied := make(chan string)
		go func() {
			// Once the initial state is printed, a change.
			for w.count() < strings.Count(c.want, "\n")-1 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			_, out, stderr := f.run("apply", "-f", web)
			applied <- out + stderr
		}()
		if err := watchObjects(ctx, &Client{Server: f.URL, Token: fleetToken}, w, "services", nil, "", tmpl, listOptions{}); err != nil {
			t.Fatal(err)
		}
		if out := <-applied; out != "service/web created\n" {
			t.Errorf("apply web: %s", out)
		}
		if got := w.String(); got != c.want {
			t.Errorf("get svc -w -o %s:\n%s\nwant:\n%s", c.format, got, c.want)
		}
	}
}

// linesUntil is a writer that calls done once it holds lines lines.
type linesUntil struct {
	mu    sync.Mutex
	b     strings.Builder
	lines int
	done  func()
}

func (l *linesUntil) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	if strings.Count(l.b.String(), "\n") >= l.lines {
		l.done()
	}
	return len(p), nil
}

func (l *linesUntil) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), "\n")
}

func (l *linesUntil) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
