package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"svcbridge/auth/authtest"
	"testing"
	"time"
)

func TestStaticTokensMapToTheirRoles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	os.WriteFile(path, []byte(`tokens:
  - {name: ci, role: developer, token: "0123456789abcdef-ci"}
  - {name: ops, role: SRE, sha256: "`+sha256Hex("0123456789abcdef-ops")+`"}
`), 0o600)
	s, err := LoadStatic(path)
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]Principal{
		"0123456789abcdef-ci":  {Subject: "ci", Role: Developer},
		"0123456789abcdef-ops": {Subject: "ops", Role: SRE},
	} {
		if got, err := s.Authenticate(context.Background(), token); err != nil || got != want {
			t.Errorf("%s: got %v %v, want %v", token, got, err, want)
		}
	}
	if _, err := s.Authenticate(context.Background(), "0123456789abcdef-xx"); err == nil {
		t.Errorf("an unknown token was accepted")
	}
}

func TestStaticTokensFileIsChecked(t *testing.T) {
	for _, bad := range []StaticToken{
		{Name: "a", Role: "root", Token: "0123456789abcdef"},
		{Name: "b", Role: "admin", Token: "short"},
		{Name: "c", Role: "admin"},
		{Name: "d", Role: "admin", Token: "0123456789abcdef", SHA256: sha256Hex("x")},
		{Name: "e", Role: "admin", SHA256: "zz"},
	} {
		if _, err := NewStatic(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestRolesGrantWhatTheReferenceGrants(t *testing.T) {
	cases := []struct {
		method, route string
		lowest        Role
	}{
		{"GET", "/api/v3/services", Viewer},
		{"GET", "/api/v3/services/:name", Viewer},
		{"POST", "/api/v3/services", Developer},
		{"PATCH", "/api/v3/services/yaml/:name", Developer},
		{"DELETE", "/api/v3/services/:name", Developer},
		{"POST", "/api/v3/services/:name/reconcile", Developer},
		{"GET", "/api/v3/agents/:agent/router", Viewer},
		{"POST", "/api/v3/agents", SRE},
		{"POST", "/api/v3/agents/:agent/token", SRE},
		{"DELETE", "/api/v3/microservices/:uuid", SRE},
	}
	for _, c := range cases {
		for i, r := range Roles {
			want := i >= indexOf(c.lowest)
			if got := Allowed(r, c.method, c.route); got != want {
				t.Errorf("%s %s as %s: allowed %v, want %v", c.method, c.route, r, got, want)
			}
		}
	}
}

func indexOf(r Role) int {
	for i, x := range Roles {
		if x == r {
			return i
		}
	}
	return -1
}

func TestOIDCAccessTokens(t *testing.T) {
	is := authtest.NewIssuer(t)
	ctx := context.Background()
	o, err := NewOIDC(ctx, is.URL, "svcbridge", "realm_access.roles")
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	p, err := o.Authenticate(ctx, is.Token(t, is.Claims("svcbridge", later, "offline_access", "developer", "viewer"), nil))
	if err != nil || p != (Principal{Subject: "alice", Role: Developer}) {
		t.Fatalf("valid token: %v %v, want alice as developer (the strongest role)", p, err)
	}
	// Role names are compared as the issuer states them.
	for _, near := range []string{"Admin", "admin ", "ADMIN"} {
		p, err := o.Authenticate(ctx, is.Token(t, is.Claims("svcbridge", later, near, "viewer"), nil))
		if err != nil || p.Role != Viewer {
			t.Errorf("a token with role %q: %v %v, want viewer (its one exact role)", near, p, err)
		}
	}
	stranger := authtest.StrangerKey(t)
	for name, tok := range map[string]string{
		"expired":        is.Token(t, is.Claims("svcbridge", time.Now().Add(-time.Minute), "admin"), nil),
		"wrong audience": is.Token(t, is.Claims("other-app", later, "admin"), nil),
		"badly signed":   is.Token(t, is.Claims("svcbridge", later, "admin"), stranger),
		"no role":        is.Token(t, is.Claims("svcbridge", later, "offline_access"), nil),
		"not a jwt":      "not-a-jwt",
	} {
		if p, err := o.Authenticate(ctx, tok); err == nil {
			t.Errorf("%s token accepted as %v", name, p)
		}
	}
	// The issuer rotates its key: tokens signed with the new key are
	// accepted (the JWKS is fetched again for the unknown kid).
	is.Rotate(t)
	if p, err := o.Authenticate(ctx, is.Token(t, is.Claims("svcbridge", later, "admin"), nil)); err != nil || p.Role != Admin {
		t.Errorf("token of the rotated key: %v %v", p, err)
	}
}

func TestOIDCNeedsAnAudience(t *testing.T) {
	is := authtest.NewIssuer(t)
	if _, err := NewOIDC(context.Background(), is.URL, "", "roles"); err == nil || !strings.Contains(err.Error(), "audience") {
		t.Errorf("no audience: %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "": "", "Bearer": ""} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", header)
		if got := BearerToken(r); got != want {
			t.Errorf("%q: %q, want %q", header, got, want)
		}
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
