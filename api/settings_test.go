package api

import (
	"testing"

	"svcbridge/auth"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/wire"
)

// TestSettings: GET /settings answers the tag prefix, the bridge ports
// range (as configured, and its ports) and the control plane the server
// runs with, to every role, and nothing without a token. It reads no
// store.
func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*Options)
		want wire.Settings
	}{
		{"defaults", func(*Options) {}, wire.Settings{ServiceAnnotationTag: "service.iofog.org/tag",
			BridgePortsRange: "10024-65535", BridgePorts: wire.PortRange{First: 10024, Last: 65535}, ControlPlane: "remote"}},
		{"configured", func(o *Options) {
			o.Tags = service.TagRule{Prefix: "service.datasance.com/tag"}
			o.BridgePorts, o.BridgePortsRaw = store.PortRange{First: 20000, Last: 20099}, "20000-20099"
			o.ControlPlane = service.ControlPlaneKubernetes
		}, wire.Settings{ServiceAnnotationTag: "service.datasance.com/tag",
			BridgePortsRange: "20000-20099", BridgePorts: wire.PortRange{First: 20000, Last: 20099}, ControlPlane: "kubernetes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, _, _ := newTestAPI(t, store.SQLite, tc.opts)
			for _, role := range auth.Roles {
				var got wire.Settings
				api.JSON("GET", "/api/v3/settings", nil, bearer(testTokens[role])...).Want(200).Decode(&got)
				if got != tc.want {
					t.Fatalf("as %s: %+v, want %+v", role, got, tc.want)
				}
			}
			api.JSON("GET", "/api/v3/settings", nil, noBearer...).Want(401)
			api.Do("GET", "/api/v3/settings?dryRun=true", nil).Want(400)
		})
	}
}

// TestSelf: GET /user/self names the caller and its role, and says which
// of the console's actions it may take as the routes decide them: a
// viewer's console offers no Retry.
func TestSelf(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite, func(*Options) {})
	for _, role := range auth.Roles {
		var got wire.Self
		api.JSON("GET", "/api/v3/user/self", nil, bearer(testTokens[role])...).Want(200).Decode(&got)
		if got.Name != string(role) || got.Role != string(role) || got.Actions["reconcileService"] != (role != auth.Viewer) {
			t.Errorf("as %s: %+v", role, got)
		}
	}
	api.JSON("GET", "/api/v3/user/self", nil, noBearer...).Want(401)
}
