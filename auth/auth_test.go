package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
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

// issuer is a local OpenID Connect issuer: discovery document and JWKS,
// with keys the test can rotate.
type issuer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys []*rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{}
	is.rotate(t)
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/keys",
			"authorization_endpoint": is.srv.URL + "/auth", "token_endpoint": is.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		is.mu.Lock()
		defer is.mu.Unlock()
		var set jose.JSONWebKeySet
		for i, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid(i), Algorithm: "RS256", Use: "sig"})
		}
		json.NewEncoder(w).Encode(set)
	})
	return is
}

func kid(i int) string { return "key-" + string(rune('a'+i)) }

// rotate adds a new signing key; the JWKS serves all keys so far.
func (is *issuer) rotate(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	is.keys = append(is.keys, k)
	is.mu.Unlock()
}

// token signs claims with the newest key (or with key, when given).
func (is *issuer) token(t *testing.T, claims map[string]any, key *rsa.PrivateKey) string {
	is.mu.Lock()
	i := len(is.keys) - 1
	if key == nil {
		key = is.keys[i]
	}
	is.mu.Unlock()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid(i)))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (is *issuer) claims(aud string, exp time.Time, roles ...string) map[string]any {
	return map[string]any{"iss": is.srv.URL, "sub": "u-1", "preferred_username": "alice", "aud": aud,
		"exp": exp.Unix(), "iat": time.Now().Unix(), "realm_access": map[string]any{"roles": roles}}
}

func TestOIDCAccessTokens(t *testing.T) {
	is := newIssuer(t)
	ctx := context.Background()
	o, err := NewOIDC(ctx, is.srv.URL, "svcbridge", "realm_access.roles")
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	p, err := o.Authenticate(ctx, is.token(t, is.claims("svcbridge", later, "offline_access", "developer", "viewer"), nil))
	if err != nil || p != (Principal{Subject: "alice", Role: Developer}) {
		t.Fatalf("valid token: %v %v, want alice as developer (the strongest role)", p, err)
	}
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, tok := range map[string]string{
		"expired":        is.token(t, is.claims("svcbridge", time.Now().Add(-time.Minute), "admin"), nil),
		"wrong audience": is.token(t, is.claims("other-app", later, "admin"), nil),
		"badly signed":   is.token(t, is.claims("svcbridge", later, "admin"), stranger),
		"no role":        is.token(t, is.claims("svcbridge", later, "offline_access"), nil),
		"not a jwt":      "not-a-jwt",
	} {
		if p, err := o.Authenticate(ctx, tok); err == nil {
			t.Errorf("%s token accepted as %v", name, p)
		}
	}
	// The issuer rotates its key: tokens signed with the new key are
	// accepted (the JWKS is fetched again for the unknown kid).
	is.rotate(t)
	if p, err := o.Authenticate(ctx, is.token(t, is.claims("svcbridge", later, "admin"), nil)); err != nil || p.Role != Admin {
		t.Errorf("token of the rotated key: %v %v", p, err)
	}
}

func TestOIDCNeedsAnAudience(t *testing.T) {
	is := newIssuer(t)
	if _, err := NewOIDC(context.Background(), is.srv.URL, "", "roles"); err == nil || !strings.Contains(err.Error(), "audience") {
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
