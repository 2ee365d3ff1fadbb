package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"svcbridge/api"
	"svcbridge/auth"
	"svcbridge/auth/authtest"
	"svcbridge/inventory"
	"svcbridge/store"
)

// TestConsoleFleetNetworkRetry is an operator's round in the console the
// api serves, in headless Chromium, signed in with a token as a person
// does. Each step checks what is on the page and saves a screenshot:
//
//  1. Fleet: the failed service is the first row, red, with the reason
//     provisioningError gives, and a History link to its workflow; the
//     summary counts it. web's panel lists the hub listening for it.
//  2. Network: with the tagged service selected, the hub is drawn as its
//     connector and an untagged edge as not listening; tagging the edge
//     through the API turns it into a listener on the open page (no
//     reload), in the list and in the picture's colour. With no service
//     selected, edge-1 is shown as not acknowledging its newest config
//     until it acknowledges it.
//     The microservices view names the checkout's agent and service, the
//     agents view edge-1's new tag, and opens edge-1's services.
//  3. Retry: the failure's cause is removed where svcbridge does not see
//     it (the store, as an outside fix would be): the row stays red until
//     Retry is clicked, then turns green by itself (the watch), and the
//     service records the reconcile request.
//  4. A viewer's console has no Retry.
func TestConsoleFleetNetworkRetry(t *testing.T) {
	browser := chromium(t)
	s := newSystem(t, "sqlite", 1, noRetries)
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	reason := failingService(s)
	edge := s.agent(map[string]any{"name": "edge-1", "routerMode": "edge"})
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "web", "type": "external", "resource": "web.example.com", "targetPort": 80, "tags": []string{"web"}}, nil)
	s.waitStatus("web", "ready")

	b := newBrowser(t, browser)
	b.signIn(s.url, testAdminToken)

	// 1. The fleet at a glance.
	b.see("checkout", reason)
	first := b.eval(`document.querySelector('[data-service]')?.dataset.service ?? ""`)
	if first != "checkout" {
		t.Errorf("the first row is %q, want the failed service checkout", first)
	}
	if row := b.eval(`document.querySelector('[data-service="checkout"]').className`); !strings.Contains(row, "status-failed") {
		t.Errorf("checkout's row has classes %q, want status-failed", row)
	}
	if c := b.eval(`getComputedStyle(document.querySelector('[data-service="checkout"] .status')).color`); !isRed(c) {
		t.Errorf("checkout's status is drawn in %s, want red", c)
	}
	if sum := b.eval(`document.querySelector('#services-summary').textContent`); !strings.Contains(sum, "1 failed") || !strings.Contains(sum, "1 ready") {
		t.Errorf("summary %q, want 1 failed and 1 ready", sum)
	}
	svc, _ := s.getService("checkout")
	if href := b.eval(`document.querySelector('[data-service="checkout"] a.history')?.href ?? ""`); href != testWebUI+"/namespaces/default/workflows/"+strings.ReplaceAll(svc.WorkflowID, "/", "%2F") {
		t.Errorf("checkout's History link is %q", href)
	}
	b.screenshot("console-1-fleet-failed.png")
	// A service's panel: its rollout, an entry per agent that should hold it.
	b.navigate(s.url + "/console/#/services?service=web")
	b.waitEval("web's rollout on the hub", `document.querySelector('#service-detail [data-rollout-agent="hub"]')?.innerText.includes("yes") ? "yes" : ""`, "yes")

	// 2. The network, and a tag edit seen live.
	b.navigate(s.url + "/console/#/network?service=web")
	b.waitState("hub", "connector")
	b.waitState("edge-1", "not-listening")
	grey := b.nodeColour(edge.UUID)
	b.screenshot("console-2-network-before-tag.png")
	s.must(http.StatusOK, "PATCH", "/api/v3/agents/edge-1", map[string]any{"tags": []string{"service.iofog.org/tag: web"}}, nil)
	state := b.waitState("edge-1", "pending", "acknowledged", "applied")
	if c := b.nodeColour(edge.UUID); c == grey {
		t.Errorf("edge-1 is %s in the picture after it started listening (%s), as before", c, state)
	}
	b.screenshot("console-3-network-after-tag.png")

	// With no service selected, the picture says which agents have not
	// acknowledged their newest config: edge-1 has not, until it does.
	b.navigate(s.url + "/console/#/network")
	b.waitState("edge-1", "unacknowledged")
	auth := func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+edge.Token) }
	var ch struct {
		LastUpdated int64 `json:"lastUpdated"`
	}
	s.agentCall(auth, "GET", "/api/v3/agent/config/changes", nil, http.StatusOK, &ch)
	s.agentCall(auth, "PATCH", "/api/v3/agent/config/changes", map[string]any{"lastUpdated": ch.LastUpdated}, http.StatusNoContent, nil)
	b.waitState("edge-1", "acknowledged")

	// Agents and microservices, by name, with their services.
	b.navigate(s.url + "/console/#/microservices")
	b.waitEval("orders/checkout's row", `document.querySelector('[data-microservice="orders/checkout"]')?.innerText.replace(/\s+/g, " ").trim() ?? ""`,
		"orders/checkout fog-a checkout")
	b.navigate(s.url + "/console/#/agents")
	b.waitEval("edge-1's row", `document.querySelector('[data-agent-row="edge-1"] td:nth-child(4)')?.innerText.trim() ?? ""`,
		"service.iofog.org/tag: web")
	b.click(`[data-agent-row="edge-1"]`, "")
	b.waitEval("edge-1's services", `String(document.querySelector('[data-agent-services="edge-1"] [data-agent-service="web"]') !== null)`, "true")

	// 3. Retry turns the row green.
	b.navigate(s.url + "/console/#/services")
	b.see("checkout", reason)
	ctx := context.Background()
	if err := s.store.InTx(ctx, func(tx *store.Tx) error {
		a, err := tx.GetAgent(ctx, "fog-a")
		if err != nil {
			return err
		}
		hub, err := tx.GetAgent(ctx, "hub")
		if err != nil {
			return err
		}
		a.RouterMode, a.UpstreamRouters = inventory.RouterEdge, []string{hub.UUID}
		return tx.UpdateAgent(ctx, &a)
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // a watch's reading or two: nothing changes by itself
	if row := b.eval(`document.querySelector('[data-service="checkout"]').className`); !strings.Contains(row, "status-failed") {
		t.Fatalf("checkout's row turned %q before Retry", row)
	}
	before, _ := s.getService("checkout")
	b.click(`[data-service="checkout"] button.retry`, "Retry")
	b.waitClass(`[data-service="checkout"]`, "status-ready")
	if c := b.eval(`getComputedStyle(document.querySelector('[data-service="checkout"] .status')).color`); !isGreen(c) {
		t.Errorf("checkout's status is drawn in %s once ready, want green", c)
	}
	if after, _ := s.getService("checkout"); after.ReconcileRequest != before.ReconcileRequest+1 {
		t.Errorf("reconcile requests %d → %d, want one more from Retry", before.ReconcileRequest, after.ReconcileRequest)
	}
	b.screenshot("console-4-retried-green.png")

	// 4. A viewer reads the same fleet and may not retry.
	b.click(`#sign-out`, "")
	b.signIn(s.url, testViewerToken)
	b.see("checkout", "web", "test-viewer")
	if n := b.eval(`String(document.querySelectorAll('button.retry').length)`); n != "0" {
		t.Errorf("a viewer's console offers %s Retry buttons", n)
	}
}

// TestConsolePasswordSession signs in to the console with an email and
// password at an OIDC issuer (the API's password grant), in headless
// Chromium: a wrong one-time code is refused with words, the right one
// shows the user's role and the actions it allows; an access token that
// expired is refreshed without signing in again; signing out shows the
// form.
func TestConsolePasswordSession(t *testing.T) {
	browser := chromium(t)
	is := authtest.NewIssuer(t)
	is.AddUser("alice@example.com", authtest.User{Password: "s3cret", TOTP: "123456", Roles: []string{"developer"}})
	o, err := auth.NewOIDC(context.Background(), is.URL, is.ClientID, "realm_access.roles")
	if err != nil {
		t.Fatal(err)
	}
	s := newSystem(t, "sqlite", 0, func(s *system) {
		s.apiOptions = func(opts *api.Options) {
			opts.Auth = auth.Chain{opts.Auth, o}
			opts.Sessions.Issuer = &auth.TokenEndpoint{URL: o.TokenURL(), ClientID: is.ClientID, ClientSecret: is.ClientSecret}
		}
	})
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}, nil)

	b := newBrowser(t, browser)
	b.navigate(s.url + "/console/")
	login := func(totp string) {
		b.waitEval("the sign-in form", `String(document.querySelector('#login-email')?.checkVisibility() ?? false)`, "true")
		b.eval(`(() => { document.querySelectorAll('#password-form input').forEach(i => i.value = ''); return ''; })()`)
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		var fields []chromedp.Action[chromedp.Void]
		for id, v := range map[string]string{"#login-email": "alice@example.com", "#login-password": "s3cret", "#login-totp": totp} {
			fields = append(fields, chromedp.SendKeys(chromedp.CSS(id), v))
		}
		if err := chromedp.Do(ctx, append(fields, chromedp.Click(chromedp.CSS(`#password-form button[type=submit]`)))...); err != nil {
			b.screenshot("failed-password-form.png")
			t.Fatal(err)
		}
	}
	login("000000")
	b.see("Wrong email or password")
	login("123456")
	b.waitEval("who is signed in", `document.querySelector('#whoami')?.textContent ?? ""`, "alice (developer)")
	b.waitEval("vendor's Retry", `String(document.querySelector('[data-service="vendor"] button.retry') !== null)`, "true")
	b.screenshot("console-5-password-session.png")

	// The access token expires: the console refreshes it on the API's 401.
	first := b.eval(`JSON.parse(sessionStorage.getItem('svcbridge.session')).refreshToken`)
	b.eval(`(() => { const s = JSON.parse(sessionStorage.getItem('svcbridge.session')); s.accessToken = 'expired'; sessionStorage.setItem('svcbridge.session', JSON.stringify(s)); return ''; })()`)
	b.navigate("about:blank")
	b.navigate(s.url + "/console/#/services")
	b.waitEval("vendor's row after the refresh", `String(document.querySelector('[data-service="vendor"]') !== null && document.querySelector('#login').hidden)`, "true")
	if next := b.eval(`JSON.parse(sessionStorage.getItem('svcbridge.session')).refreshToken`); next == first {
		t.Errorf("the session kept its spent refresh token %q", first)
	}
	if a := b.eval(`JSON.parse(sessionStorage.getItem('svcbridge.session')).accessToken`); a == "expired" {
		t.Error("the console still holds the expired access token")
	}

	b.click(`#sign-out`, "")
	b.waitEval("the sign-in form", `String(!document.querySelector('#login').hidden && sessionStorage.getItem('svcbridge.session') === null)`, "true")
}

// signIn opens the console and signs in with token through its form.
func (b *browser) signIn(base, token string) {
	b.t.Helper()
	b.navigate(base + "/console/")
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#login-token`)), chromedp.SendKeys(chromedp.CSS(`#login-token`), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#whoami`))); err != nil {
		b.screenshot("failed-sign-in.png")
		b.t.Fatalf("sign in: %v", err)
	}
}

// navigate loads page without waiting for its watches to end.
func (b *browser) navigate(page string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	_ = chromedp.Do(ctx, chromedp.Navigate(page))
}

// eval evaluates a JavaScript expression of a string.
func (b *browser) eval(js string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.screenshot("failed-eval.png")
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitEval waits until js evaluates to one of wants, and returns it.
func (b *browser) waitEval(what, js string, wants ...string) string {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		cancel()
		if got = v; err == nil {
			for _, w := range wants {
				if v == w {
					return v
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.screenshot("timeout.png")
	b.t.Fatalf("%s is %q, never %q", what, got, wants)
	return ""
}

// waitState waits until the network list shows router in one of states.
func (b *browser) waitState(router string, states ...string) string {
	b.t.Helper()
	return b.waitEval("router "+router+"'s state",
		fmt.Sprintf(`document.querySelector('#network-list [data-router=%q]')?.dataset.state ?? ""`, router), states...)
}

// waitClass waits until the element css selects has class.
func (b *browser) waitClass(css, class string) {
	b.t.Helper()
	b.waitEval(css+"'s class "+class, fmt.Sprintf(`String(document.querySelector(%q)?.classList.contains(%q))`, css, class), "true")
}

// nodeColour is the fill of an agent's node in the network picture, once
// it is drawn (cytoscape loads when the view first opens).
func (b *browser) nodeColour(uuid string) string {
	b.t.Helper()
	b.waitEval("the picture's node "+uuid, fmt.Sprintf(`String(window.svcbridgeGraph?.$id(%q).length === 1)`, uuid), "true")
	return b.eval(fmt.Sprintf(`window.svcbridgeGraph.$id(%q).style('background-color')`, uuid))
}

func rgb(c string) (r, g, b int, ok bool) {
	_, err := fmt.Sscanf(c, "rgb(%d, %d, %d)", &r, &g, &b)
	return r, g, b, err == nil
}

func isRed(c string) bool {
	r, g, b, ok := rgb(c)
	return ok && r > 150 && g < 100 && b < 100
}

func isGreen(c string) bool {
	r, g, b, ok := rgb(c)
	return ok && g > 90 && r < g-30 && b < g
}

// BenchmarkConsoleLoad is how long the console takes to show a fleet of
// 10,000 services (1 in 100 failed) and 1,000 agents on PostgreSQL, from
// navigation to the services table drawn from the watch's first state
// (performance mark services-rendered), and to the network picture of
// every router drawn (network-rendered). Run with
//
//	go test ./systemtest/ -run '^$' -bench ConsoleLoad -benchtime 3x -timeout 20m
func BenchmarkConsoleLoad(b *testing.B) {
	browser := chromium(b)
	s := newBenchSystem(b, 0)
	s.seedAgents(1000, "service.iofog.org/tag: t-1")
	s.seedServices(10000)
	if _, err := s.db.Exec(`UPDATE services SET
		provisioning_status = CASE WHEN bridge_port % 100 = 0 THEN 'failed' ELSE 'ready' END,
		provisioning_error = CASE WHEN bridge_port % 100 = 0 THEN 'Agent fog-a has routerMode none: a TCP bridge service requires a router on the agent' END,
		service_endpoint = 'hub.example.com'`); err != nil {
		b.Fatal(err)
	}
	br := newBrowser(b, browser)
	br.signIn(s.url, testAdminToken)
	mark := func(page, name string) float64 {
		br.navigate("about:blank")
		br.navigate(page)
		br.waitEval(name, fmt.Sprintf(`String(performance.getEntriesByName(%q).length)`, name), "1")
		ms, err := strconv.ParseFloat(br.eval(fmt.Sprintf(`String(performance.getEntriesByName(%q)[0].startTime)`, name)), 64)
		if err != nil {
			b.Fatal(err)
		}
		return ms
	}
	var services, network float64
	for b.Loop() {
		services += mark(s.url+"/console/#/services", "services-rendered")
		network += mark(s.url+"/console/#/network", "network-rendered")
	}
	if n := br.eval(`String(document.querySelectorAll('#network-list [data-router]').length)`); n != "1001" {
		b.Errorf("the network lists %s routers, want 1,001", n)
	}
	b.ReportMetric(services/float64(b.N), "ms/services-view")
	b.ReportMetric(network/float64(b.N), "ms/network-view")
	b.ReportMetric(0, "ns/op")
}
