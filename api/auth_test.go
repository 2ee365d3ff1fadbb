package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/auth/authtest"
	"svcbridge/store"
)

// lowestRole is the reference controller's catalogue applied to every
// route: reading for everyone, Services for developers and up, the
// inventory for sre and admin. A new route must be added here.
var lowestRole = map[string]auth.Role{
	"GET /api/v3/services":                    auth.Viewer,
	"GET /api/v3/user/self":                   auth.Viewer,
	"GET /api/v3/services/:name":              auth.Viewer,
	"GET /api/v3/services/:name/distribution": auth.Viewer,
	"GET /api/v3/services/:name/events":       auth.Viewer,
	"GET /api/v3/events":                      auth.Viewer,
	"GET /api/v3/settings":                    auth.Viewer,
	"POST /api/v3/services":                   auth.Developer,
	"POST /api/v3/services/yaml":              auth.Developer,
	"PATCH /api/v3/services/:name":            auth.Developer,
	"PATCH /api/v3/services/yaml/:name":       auth.Developer,
	"DELETE /api/v3/services/:name":           auth.Developer,
	"POST /api/v3/services/:name/reconcile":   auth.Developer,
	"GET /api/v3/agents":                      auth.Viewer,
	"GET /api/v3/agents/:agent":               auth.Viewer,
	"GET /api/v3/agents/:agent/router":        auth.Viewer,
	"GET /api/v3/agents/:agent/services":      auth.Viewer,
	"POST /api/v3/agents":                     auth.SRE,
	"POST /api/v3/agents/yaml":                auth.SRE,
	"PATCH /api/v3/agents/:agent":             auth.SRE,
	"DELETE /api/v3/agents/:agent":            auth.SRE,
	"POST /api/v3/agents/:agent/token":        auth.SRE,
	"GET /api/v3/microservices":               auth.Viewer,
	"GET /api/v3/microservices/:uuid":         auth.Viewer,
	"GET /api/v3/iofog-list":                  auth.Viewer,
	"GET /api/v3/iofog/:uuid":                 auth.Viewer,
	"POST /api/v3/microservices":              auth.SRE,
	"PATCH /api/v3/microservices/:uuid":       auth.SRE,
	"DELETE /api/v3/microservices/:uuid":      auth.SRE,
	// The reference controller's routes: reads for everyone, writes as
	// the native writes they map onto.
	"PATCH /api/v3/iofog/:uuid":              auth.SRE,
	"DELETE /api/v3/iofog/:uuid":             auth.SRE,
	"POST /api/v3/microservices/yaml":        auth.SRE,
	"PATCH /api/v3/microservices/yaml/:uuid": auth.SRE,
	"GET /api/v3/microservices/system":       auth.Viewer,
	"GET /api/v3/application":                auth.Viewer,
	"GET /api/v3/application/system":         auth.Viewer,
	"GET /api/v3/routes":                     auth.Viewer,
	"GET /api/v3/volumeMounts":               auth.Viewer,
}

// publicRoutes need no token: what potctl and the Go SDK call to build a
// session. A new one must be added here.
var publicRoutes = []string{"GET /api/v3/status", "POST /api/v3/user/refresh", "POST /api/v3/user/login"}

// userRoutes lists the routes that take a user's token.
func userRoutes(t *testing.T) []gin.RouteInfo {
	var out []gin.RouteInfo
	for _, r := range New(Options{}).(*gin.Engine).Routes() {
		if strings.HasPrefix(r.Path, "/api/v3/") && !strings.HasPrefix(r.Path, "/api/v3/agent/") &&
			!slices.Contains(publicRoutes, r.Method+" "+r.Path) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatal("no user routes")
	}
	return out
}

func concrete(path string) string {
	for _, p := range []string{":name", ":agent", ":uuid"} {
		path = strings.ReplaceAll(path, p, "no-such-thing")
	}
	return path
}

func rank(r auth.Role) int {
	for i, x := range auth.Roles {
		if x == r {
			return i
		}
	}
	return -1
}

// TestEveryRouteEveryRole: each role reaches exactly the routes its role
// allows; the others get 403 whether or not the resource exists, and no
// token gets 401.
func TestEveryRouteEveryRole(t *testing.T) {
	api, _, rec := newTestAPI(t, store.SQLite)
	for _, r := range userRoutes(t) {
		key := r.Method + " " + r.Path
		lowest, ok := lowestRole[key]
		if !ok {
			t.Errorf("route %s has no expected role in lowestRole", key)
			continue
		}
		path := concrete(r.Path)
		for _, role := range auth.Roles {
			res := api.JSON(r.Method, path, "{}", "Authorization", "Bearer "+testTokens[role])
			if rank(role) >= rank(lowest) {
				if res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden {
					t.Errorf("%s as %s: %d, want it allowed: %s", key, role, res.Status, res.Body)
				}
				continue
			}
			if res.Status != http.StatusForbidden {
				t.Errorf("%s as %s: %d, want 403: %s", key, role, res.Status, res.Body)
				continue
			}
			var body map[string]string
			json.Unmarshal(res.Body, &body)
			if body["error"] != "Forbidden" || !strings.Contains(body["message"], string(role)) {
				t.Errorf("%s as %s: 403 body %s", key, role, res.Body)
			}
		}
		res := api.JSON(r.Method, path, "{}", "Authorization", "")
		if res.Status != http.StatusUnauthorized || !strings.Contains(string(res.Body), "Unauthorized: No authentication information found") {
			t.Errorf("%s without a token: %d %s, want 401", key, res.Status, res.Body)
		}
	}
	// Denied requests changed nothing.
	if rec.Calls() != 0 {
		t.Errorf("denied requests triggered %d reconciles", rec.Calls())
	}
}

// TestPublicRoutesNeedNoToken: the session calls answer without a token,
// and an agent's credential is no user session.
func TestPublicRoutesNeedNoToken(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	for _, key := range publicRoutes {
		method, path, _ := strings.Cut(key, " ")
		if res := api.JSON(method, path, "{}", "Authorization", ""); res.Status == http.StatusForbidden ||
			(res.Status == http.StatusUnauthorized && strings.Contains(string(res.Body), "No authentication information")) {
			t.Errorf("%s without a token: %d %s", key, res.Status, res.Body)
		}
	}
	var a struct {
		Token string `json:"token"`
	}
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "fog-a", "routerMode": "edge"}).Want(http.StatusCreated).Decode(&a)
	api.JSON("POST", "/api/v3/user/refresh", map[string]string{"refreshToken": a.Token}, "Authorization", "").Want(http.StatusUnauthorized)
}

func TestAgentCredentialsOpenNoUserRoute(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	var a struct {
		Token string `json:"token"`
	}
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "fog-a", "routerMode": "edge"}).Want(http.StatusCreated).Decode(&a)
	for _, path := range []string{"/api/v3/services", "/api/v3/agents", "/api/v3/agents/fog-a/router"} {
		api.JSON("GET", path, nil, bearer(a.Token)...).Want(http.StatusUnauthorized)
	}
	// And a user's token opens no agent route.
	api.JSON("GET", "/api/v3/agent/router", nil, "Authorization", "Bearer "+testTokens[auth.Admin]).Want(http.StatusUnauthorized)
}

func TestOIDCTokensThroughTheAPI(t *testing.T) {
	is := authtest.NewIssuer(t)
	o, err := auth.NewOIDC(context.Background(), is.URL, "svcbridge", "realm_access.roles")
	if err != nil {
		t.Fatal(err)
	}
	api, _, _ := newTestAPI(t, store.SQLite, func(opt *Options) { opt.Auth = auth.Chain{opt.Auth, o} })
	later := time.Now().Add(time.Hour)
	dev := is.Token(t, is.Claims("svcbridge", later, "developer"), nil)
	viewer := is.Token(t, is.Claims("svcbridge", later, "viewer"), nil)
	body := map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}
	api.JSON("POST", "/api/v3/services", body, "Authorization", "Bearer "+viewer).Want(http.StatusForbidden)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true},
		"Authorization", "Bearer "+dev).Want(http.StatusForbidden)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true}).Want(http.StatusCreated)
	api.JSON("POST", "/api/v3/services", body, "Authorization", "Bearer "+dev).Want(http.StatusCreated)
	var bodies []string
	for name, tok := range map[string]string{
		"expired":        is.Token(t, is.Claims("svcbridge", time.Now().Add(-time.Minute), "admin"), nil),
		"wrong audience": is.Token(t, is.Claims("another-client", later, "admin"), nil),
		"badly signed":   is.Token(t, is.Claims("svcbridge", later, "admin"), authtest.StrangerKey(t)),
	} {
		res := api.JSON("GET", "/api/v3/services", nil, "Authorization", "Bearer "+tok)
		if res.Status != http.StatusUnauthorized {
			t.Errorf("%s token: %d, want 401", name, res.Status)
		}
		bodies = append(bodies, string(res.Body))
	}
	// Why a token failed is for the log, not the caller: every 401 reads the same.
	if bodies[0] != bodies[1] || bodies[1] != bodies[2] {
		t.Errorf("the 401 answers differ by reason: %q", bodies)
	}
	// A rotated signing key is picked up.
	is.Rotate(t)
	api.JSON("GET", "/api/v3/services", nil, "Authorization", "Bearer "+is.Token(t, is.Claims("svcbridge", later, "viewer"), nil)).Want(http.StatusOK)
}
