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

// Issuer serves /.well-known/openid-configuration, its JWKS, and a token
// endpoint with the password and refresh_token grants for the users the
// test adds (Keycloak's way: the one-time code is the `totp` parameter).
type Issuer struct {
	URL string
	// ClientID and ClientSecret are the client the token endpoint accepts.
	ClientID, ClientSecret string
	t                      testing.TB
	mu                     sync.Mutex
	keys                   []*rsa.PrivateKey
	users                  map[string]User
	refresh                map[string]string // refresh token -> user
}

// User is an account of the token endpoint.
type User struct {
	Password, TOTP string
	Roles          []string
}

// NewIssuer starts an issuer with one key; it stops with the test.
func NewIssuer(t testing.TB) *Issuer {
	is := &Issuer{ClientID: "svcbridge", ClientSecret: "client-secret", t: t,
		users: map[string]User{}, refresh: map[string]string{}}
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
	mux.HandleFunc("/token", is.token)
	return is
}

// AddUser lets email log in with u's password (and one-time code).
func (is *Issuer) AddUser(email string, u User) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.users[email] = u
}

// token implements the two grants, rotating refresh tokens as Keycloak
// does: a used refresh token is spent.
func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	refuse := func(code int, e string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"error": e, "error_description": e})
	}
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		refuse(http.StatusBadRequest, "invalid_request")
		return
	}
	if r.PostForm.Get("client_id") != is.ClientID || r.PostForm.Get("client_secret") != is.ClientSecret {
		refuse(http.StatusUnauthorized, "unauthorized_client")
		return
	}
	is.mu.Lock()
	var email string
	switch r.PostForm.Get("grant_type") {
	case "password":
		u, ok := is.users[r.PostForm.Get("username")]
		if ok && u.Password == r.PostForm.Get("password") && u.TOTP == r.PostForm.Get("totp") {
			email = r.PostForm.Get("username")
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		email = is.refresh[rt]
		delete(is.refresh, rt)
	}
	u, ok := is.users[email]
	var rt string
	if ok {
		b := make([]byte, 16)
		rand.Read(b)
		rt = fmt.Sprintf("rt-%x", b)
		is.refresh[rt] = email
	}
	is.mu.Unlock()
	if !ok {
		refuse(http.StatusBadRequest, "invalid_grant")
		return
	}
	access := is.Token(is.t, is.Claims(is.ClientID, time.Now().Add(5*time.Minute), u.Roles...), nil)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": access, "refresh_token": rt, "token_type": "Bearer", "expires_in": 300})
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
