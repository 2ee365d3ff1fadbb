// Package authtest is a local OpenID Connect issuer for tests: discovery
// document and JWKS over HTTP, signing keys the test can rotate, and
// tokens signed with them (or with a stranger's key).
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer serves /.well-known/openid-configuration and its JWKS.
type Issuer struct {
	URL  string
	mu   sync.Mutex
	keys []*rsa.PrivateKey
}

// NewIssuer starts an issuer with one key; it stops with the test.
func NewIssuer(t testing.TB) *Issuer {
	is := &Issuer{}
	is.Rotate(t)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.URL = srv.URL
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"authorization_endpoint": is.URL + "/auth", "token_endpoint": is.URL + "/token",
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

func kid(i int) string { return fmt.Sprintf("key-%d", i) }

// Rotate adds a new signing key; the JWKS serves every key so far and new
// tokens are signed with the newest.
func (is *Issuer) Rotate(t testing.TB) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	is.keys = append(is.keys, k)
	is.mu.Unlock()
}

// Claims are an access token's claims for audience aud, valid until exp,
// with Keycloak-style realm roles.
func (is *Issuer) Claims(aud string, exp time.Time, roles ...string) map[string]any {
	return map[string]any{"iss": is.URL, "sub": "u-1", "preferred_username": "alice", "aud": aud,
		"exp": exp.Unix(), "iat": time.Now().Unix(), "realm_access": map[string]any{"roles": roles}}
}

// Token signs claims with the newest key, or with key when it is not nil
// (a key the issuer does not publish makes a badly signed token).
func (is *Issuer) Token(t testing.TB, claims map[string]any, key *rsa.PrivateKey) string {
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

// StrangerKey is a key no issuer publishes.
func StrangerKey(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
