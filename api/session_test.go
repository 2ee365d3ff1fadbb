package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"svcbridge/auth"
	"svcbridge/auth/authtest"
	"svcbridge/service"
	"svcbridge/store"
)

// The ioFog Go SDK's shapes (iofog-go-sdk/v3 pkg/client), as potctl
// decodes our answers and encodes its requests.
type (
	sdkControllerStatus struct {
		Status        string  `json:"status"`
		UptimeSeconds float64 `json:"uptimeSec"`
		Versions      struct {
			Controller string `json:"controller"`
			EcnViewer  string `json:"ecnViewer"`
		} `json:"versions"`
	}
	sdkRefreshTokenRequest struct {
		RefreshToken string `json:"refreshToken"`
	}
	sdkLoginRequest struct {
		Email    string `json:"email"`
		Password string `json:"password"`
		Totp     string `json:"totp"`
	}
	sdkLoginResponse struct {
		AccessToken  string `json:"accessToken"`
		RefreshToken string `json:"refreshToken"`
	}
	sdkServiceInfo struct {
		Tags               []string `json:"tags"`
		Name               string   `json:"name"`
		Type               string   `json:"type"`
		Resource           string   `json:"resource"`
		TargetPort         int      `json:"targetPort"`
		ServicePort        int      `json:"servicePort"`
		K8sType            string   `json:"k8sType"`
		BridgePort         int      `json:"bridgePort"`
		DefaultBridge      string   `json:"defaultBridge"`
		ServiceEndpoint    string   `json:"serviceEndpoint"`
		ProvisioningStatus string   `json:"provisioningStatus"`
		ProvisioningError  string   `json:"provisioningError"`
		CreatedAt          string   `json:"createdAt,omitempty"`
		UpdatedAt          string   `json:"updatedAt,omitempty"`
	}
	sdkServiceCreateRequest struct {
		Name          string   `json:"name"`
		Type          string   `json:"type"`
		Resource      string   `json:"resource"`
		TargetPort    int      `json:"targetPort"`
		ServicePort   int      `json:"servicePort,omitempty"`
		K8sType       string   `json:"k8sType,omitempty"`
		DefaultBridge string   `json:"defaultBridge,omitempty"`
		Tags          []string `json:"tags,omitempty"`
	}
	sdkServiceUpdateRequest struct {
		Name          string   `json:"name,omitempty"`
		Type          string   `json:"type"`
		Resource      string   `json:"resource"`
		TargetPort    int      `json:"targetPort"`
		ServicePort   int      `json:"servicePort,omitempty"`
		K8sType       string   `json:"k8sType,omitempty"`
		DefaultBridge string   `json:"defaultBridgePort,omitempty"`
		Tags          []string `json:"tags,omitempty"`
	}
)

// noBearer is what potctl sends before it has a session.
var noBearer = []string{"Authorization", "Bearer "}

// TestPotctlContract replays what potctl (SDK v3.5.1) sends, recorded
// against the reference controller: the session first, then create, list,
// describe, update (with defaultBridgePort), the YAML create and update,
// and delete. Every answer must decode into the SDK's shapes with the
// status codes the SDK expects.
func TestPotctlContract(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true}).Want(201)

		var st sdkControllerStatus
		api.Do("GET", "/api/v3/status", nil, noBearer...).Want(200).Decode(&st)
		if st.Status != "online" || st.Versions.Controller == "" || st.UptimeSeconds < 0 {
			t.Fatalf("status %+v", st)
		}
		var sess sdkLoginResponse
		api.JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: testTokens[auth.Developer]}, noBearer...).Want(200).Decode(&sess)
		if sess.AccessToken != testTokens[auth.Developer] || sess.RefreshToken != testTokens[auth.Developer] {
			t.Fatalf("session %+v", sess)
		}
		as := bearer(sess.AccessToken)

		// potctl deploy: GET (404 means create), then POST.
		api.Do("GET", "/api/v3/services/vendor", nil, as...).WantError(404, "NotFoundError", "Service with name vendor not found")
		var created sdkServiceInfo
		api.JSON("POST", "/api/v3/services", sdkServiceCreateRequest{Name: "vendor", Type: "external", Resource: "203.0.113.10", TargetPort: 443, Tags: []string{"vendor"}}, as...).
			Want(201).Decode(&created)
		if created.Name != "vendor" || created.BridgePort == 0 || created.ProvisioningStatus != "pending" || created.DefaultBridge != "default-router" {
			t.Fatalf("created %+v", created)
		}
		api.Upload("POST", "/api/v3/services/yaml", "service", "apiVersion: iofog.org/v3\nkind: Service\nmetadata:\n  name: billing\nspec:\n  type: external\n  resource: billing.example.com\n  targetPort: 8443\n", as...).Want(201)

		// potctl get services: an array ordered by name.
		var list []sdkServiceInfo
		api.Do("GET", "/api/v3/services", nil, as...).Want(200).Decode(&list)
		var names []string
		for _, s := range list {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, []string{"billing", "vendor"}) {
			t.Fatalf("list %v", names)
		}

		// potctl deploy of a changed document: GET, then PATCH of the whole
		// object, the bridge named defaultBridgePort.
		var before sdkServiceInfo
		api.Do("GET", "/api/v3/services/vendor", nil, as...).Want(200).Decode(&before)
		api.JSON("PATCH", "/api/v3/services/vendor", sdkServiceUpdateRequest{Name: "vendor", Type: "external", Resource: "203.0.113.11", TargetPort: 8443,
			DefaultBridge: "default-router", Tags: []string{"vendor", "eu"}}, as...).Want(204)
		var after sdkServiceInfo
		api.Do("GET", "/api/v3/services/vendor", nil, as...).Want(200).Decode(&after)
		if after.Resource != "203.0.113.11" || after.TargetPort != 8443 || !slices.Equal(after.Tags, []string{"vendor", "eu"}) || after.BridgePort != before.BridgePort {
			t.Fatalf("after the update %+v", after)
		}
		api.Upload("PATCH", "/api/v3/services/yaml/billing", "service", "apiVersion: iofog.org/v3\nkind: Service\nmetadata:\n  name: billing\nspec:\n  type: external\n  resource: billing.example.com\n  targetPort: 9443\n", as...).Want(204)

		// potctl delete service.
		api.Do("DELETE", "/api/v3/services/vendor", nil, as...).Want(204)
		api.Do("GET", "/api/v3/services/vendor", nil, as...).WantError(404, "NotFoundError", "Service with name vendor not found")
	})
}

// TestDefaultBridgePortAlias: the SDK's update names the bridge
// defaultBridgePort. It is the same immutable field: the stored value
// passes, another is the same 400 as a change of defaultBridge, and
// defaultBridge wins when both are sent. Nothing is written by a refusal.
func TestDefaultBridgePortAlias(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true}).Want(201)
		api.JSON("POST", "/api/v3/services", map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}).Want(201)
		stored := func() string {
			var svc service.Service
			if err := st.InTx(context.Background(), func(tx *store.Tx) (err error) {
				svc, err = tx.GetService(context.Background(), "vendor")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return svc.Resource
		}

		api.JSON("PATCH", "/api/v3/services/vendor", map[string]any{"defaultBridgePort": "default-router", "resource": "203.0.113.11"}).Want(204)
		changeBridge := api.JSON("PATCH", "/api/v3/services/vendor", map[string]any{"defaultBridge": "edge-7"}).Want(400).Map()
		alias := api.JSON("PATCH", "/api/v3/services/vendor", map[string]any{"defaultBridgePort": "edge-7", "resource": "203.0.113.12"})
		alias.WantError(400, "ValidationError", changeBridge["message"].(string))
		api.JSON("PATCH", "/api/v3/services/vendor", map[string]any{"defaultBridge": "default-router", "defaultBridgePort": "edge-7", "resource": "203.0.113.13"}).Want(204)
		api.JSON("PATCH", "/api/v3/services/vendor", map[string]any{"defaultBridgePort": 7}).WantError(400, "ValidationError", "Field 'defaultBridgePort' is not of a type(s) string")
		if got := stored(); got != "203.0.113.13" {
			t.Fatalf("resource %q after the refused alias change, want 203.0.113.13", got)
		}
	})
}

// TestSessionWithStaticTokens: without OIDC, a refresh token that is a
// valid API token is the session; anything else is a 401 in the
// reference's envelope, and a password login says how to use a token.
func TestSessionWithStaticTokens(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	for _, tok := range []string{"", "not-a-token", testTokens[auth.Admin] + "x"} {
		r := api.JSON("POST", "/api/v3/user/refresh", map[string]string{"refreshToken": tok}, noBearer...).Want(401).Map()
		if r["name"] != "AuthenticationError" || !strings.HasPrefix(r["error"].(string), "Unauthorized") {
			t.Fatalf("refresh with %q: %v", tok, r)
		}
	}
	api.JSON("POST", "/api/v3/user/refresh", `{"refreshToken":`, noBearer...).Want(400)
	api.JSON("POST", "/api/v3/user/refresh", map[string]string{"refresh_token": testTokens[auth.Admin]}, noBearer...).Want(400)
	login := api.JSON("POST", "/api/v3/user/login", sdkLoginRequest{Email: "alice@example.com", Password: "pw", Totp: "123456"}, noBearer...).Want(401).Map()
	if msg, _ := login["message"].(string); !strings.Contains(msg, "API token") || !strings.Contains(msg, "refresh token") {
		t.Fatalf("login without OIDC: %v", login)
	}
	// A viewer's token is a session too; its role still decides.
	var sess sdkLoginResponse
	api.JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: testTokens[auth.Viewer]}, noBearer...).Want(200).Decode(&sess)
	api.Do("GET", "/api/v3/services", nil, bearer(sess.AccessToken)...).Want(200)
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "x"}, bearer(sess.AccessToken)...).Want(403)
}

// TestSessionWithOIDC: with an issuer, login is its password grant (the
// one-time code passed as Keycloak's totp), refresh its refresh_token
// grant; the access tokens it issues open the API.
func TestSessionWithOIDC(t *testing.T) {
	is := authtest.NewIssuer(t)
	is.AddUser("alice@example.com", authtest.User{Password: "s3cret", TOTP: "123456", Roles: []string{"developer"}})
	o, err := auth.NewOIDC(context.Background(), is.URL, is.ClientID, "realm_access.roles")
	if err != nil {
		t.Fatal(err)
	}
	withIssuer := func(e auth.TokenEndpoint) *testAPI {
		api, _, _ := newTestAPI(t, store.SQLite, func(opt *Options) {
			opt.Auth = auth.Chain{opt.Auth, o}
			opt.Sessions.Issuer = &e
		})
		return api
	}
	endpoint := auth.TokenEndpoint{URL: o.TokenURL(), ClientID: is.ClientID, ClientSecret: is.ClientSecret}
	api := withIssuer(endpoint)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true}).Want(201)

	api.JSON("POST", "/api/v3/user/login", sdkLoginRequest{Email: "alice@example.com", Password: "s3cret", Totp: "000000"}, noBearer...).Want(401)
	api.JSON("POST", "/api/v3/user/login", sdkLoginRequest{Email: "alice@example.com", Password: "wrong", Totp: "123456"}, noBearer...).Want(401)
	var sess sdkLoginResponse
	api.JSON("POST", "/api/v3/user/login", sdkLoginRequest{Email: "alice@example.com", Password: "s3cret", Totp: "123456"}, noBearer...).Want(200).Decode(&sess)
	if sess.AccessToken == "" || sess.RefreshToken == "" {
		t.Fatalf("login answered %+v", sess)
	}
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}, bearer(sess.AccessToken)...).Want(201)

	var next sdkLoginResponse
	api.JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: sess.RefreshToken}, noBearer...).Want(200).Decode(&next)
	if next.RefreshToken == sess.RefreshToken || next.AccessToken == "" {
		t.Fatalf("refresh answered %+v", next)
	}
	api.Do("GET", "/api/v3/services/vendor", nil, bearer(next.AccessToken)...).Want(200)
	// The issuer spent the old refresh token; static tokens still refresh.
	api.JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: sess.RefreshToken}, noBearer...).Want(401)
	api.JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: testTokens[auth.SRE]}, noBearer...).Want(200)

	// A client the issuer does not know is refused, as the issuer says.
	endpoint.ClientSecret = "wrong"
	withIssuer(endpoint).JSON("POST", "/api/v3/user/login", sdkLoginRequest{Email: "alice@example.com", Password: "s3cret", Totp: "123456"}, noBearer...).Want(401)

	// An issuer that does not answer is the server's problem: 503.
	endpoint.URL = "http://127.0.0.1:1/token"
	r := withIssuer(endpoint).JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: next.RefreshToken}, noBearer...)
	r.WantError(http.StatusServiceUnavailable, "UnavailableError", "The identity provider could not be reached; try again")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}

// The session calls, which anyone may send, read at most SessionMaxBody:
// a refresh padded with a megabyte of ignored values is refused by its
// size (announced, or chunked) before any of it is decoded.
func TestSessionBodiesAreSmall(t *testing.T) {
	api, _, _ := newTestAPI(t, "sqlite")
	junk := `{"refreshToken":"x","junk":[` + strings.Repeat("0,", 450_000) + `0]}`
	api.JSON("POST", "/api/v3/user/refresh", junk).WantError(413, "PayloadTooLargeError", fmt.Sprintf("Request body is larger than %d bytes", SessionMaxBody))
	chunked := api.Do("POST", "/api/v3/user/refresh", io.MultiReader(strings.NewReader(junk)), "Content-Type", "application/json")
	if chunked.Status != 413 {
		t.Errorf("a chunked megabyte: %d %s", chunked.Status, chunked.Body)
	}
	api.JSON("POST", "/api/v3/user/refresh", map[string]string{"refreshToken": testTokens[auth.Viewer]}).Want(200)
}
