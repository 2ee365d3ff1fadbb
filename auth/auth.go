// Package auth decides who a request comes from and what they may do:
// bearer tokens (static ones from a file, or OIDC/JWT access tokens) map to
// the roles of the reference controller, admin, sre, developer and viewer.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Role is what a user may do.
type Role string

// Roles, weakest first.
const (
	Viewer    Role = "viewer"
	Developer Role = "developer"
	SRE       Role = "sre"
	Admin     Role = "admin"
)

// Roles lists the roles, weakest first.
var Roles = []Role{Viewer, Developer, SRE, Admin}

// ParseRole reads a role name as an operator writes it in a file (any
// case, spaces around).
func ParseRole(s string) (Role, bool) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	return r, slices.Contains(Roles, r)
}

// strongest returns the strongest of an issuer's roles, false when none
// is a role. They compare exactly as the issuer states them: its "Admin"
// or "admin " is another role than admin, and grants nothing.
func strongest(names []string) (Role, bool) {
	best, found := Viewer, false
	for _, n := range names {
		if r := Role(n); slices.Contains(Roles, r) && (!found || slices.Index(Roles, r) > slices.Index(Roles, best)) {
			best, found = r, true
		}
	}
	return best, found
}

// Principal is an authenticated user.
type Principal struct {
	Subject string
	Role    Role
}

// ErrUnauthenticated means the token is not valid (unknown, expired, badly
// signed, for another audience); the reason is for logs, not for clients.
var ErrUnauthenticated = errors.New("invalid token")

// Authenticator turns a bearer token into a Principal.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// Chain tries each authenticator in turn; the first that accepts wins.
type Chain []Authenticator

// Authenticate implements Authenticator.
func (c Chain) Authenticate(ctx context.Context, token string) (Principal, error) {
	errs := []error{ErrUnauthenticated}
	for _, a := range c {
		p, err := a.Authenticate(ctx, token)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	return Principal{}, errors.Join(errs...)
}

// StaticToken is one entry of a tokens file: the token itself or its
// SHA-256 (hex), so the file need not hold secrets.
type StaticToken struct {
	Name   string `yaml:"name"`
	Role   string `yaml:"role"`
	Token  string `yaml:"token"`
	SHA256 string `yaml:"sha256"`
}

// Static accepts a fixed set of tokens, compared by hash in constant time.
type Static struct {
	entries []staticEntry
}

type staticEntry struct {
	hash [32]byte
	p    Principal
}

// NewStatic builds a Static from entries, checking each.
func NewStatic(entries ...StaticToken) (*Static, error) {
	s := &Static{}
	for i, e := range entries {
		role, ok := ParseRole(e.Role)
		if !ok {
			return nil, fmt.Errorf("token %d (%s): role %q is not one of admin, sre, developer, viewer", i+1, e.Name, e.Role)
		}
		var h [32]byte
		switch {
		case e.Token != "" && e.SHA256 == "":
			if len(e.Token) < 16 {
				return nil, fmt.Errorf("token %d (%s): a token must be at least 16 characters", i+1, e.Name)
			}
			h = sha256.Sum256([]byte(e.Token))
		case e.SHA256 != "" && e.Token == "":
			b, err := hex.DecodeString(e.SHA256)
			if err != nil || len(b) != 32 {
				return nil, fmt.Errorf("token %d (%s): sha256 must be 64 hex digits", i+1, e.Name)
			}
			copy(h[:], b)
		default:
			return nil, fmt.Errorf("token %d (%s): give exactly one of token and sha256", i+1, e.Name)
		}
		name := e.Name
		if name == "" {
			name = fmt.Sprintf("token-%d", i+1)
		}
		s.entries = append(s.entries, staticEntry{hash: h, p: Principal{Subject: name, Role: role}})
	}
	return s, nil
}

// LoadStatic reads a tokens file: YAML (or JSON) `tokens: [{name, role,
// token | sha256}]`.
func LoadStatic(path string) (*Static, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Tokens []StaticToken `yaml:"tokens"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := NewStatic(f.Tokens...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Authenticate implements Authenticator.
func (s *Static) Authenticate(_ context.Context, token string) (Principal, error) {
	h := sha256.Sum256([]byte(token))
	for _, e := range s.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			return e.p, nil
		}
	}
	return Principal{}, errors.New("unknown static token")
}

// BearerToken extracts the token of an "Authorization: Bearer" header; ""
// when there is none.
func BearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
