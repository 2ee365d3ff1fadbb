package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// OIDC validates JWT access tokens of an OpenID Connect issuer (Keycloak,
// Dex, ...): signature against the issuer's JWKS (fetched again when an
// unknown key appears, so rotation just works), issuer, audience, expiry.
// The role comes from a claim holding a role name or a list of them; the
// strongest known role wins.
type OIDC struct {
	verifier  *oidc.IDTokenVerifier
	roleClaim []string
	tokenURL  string
}

// NewOIDC discovers issuer's keys. roleClaim is a dotted path into the
// token's claims, e.g. "realm_access.roles" (Keycloak) or "roles".
func NewOIDC(ctx context.Context, issuer, audience, roleClaim string) (*OIDC, error) {
	if audience == "" {
		return nil, errors.New("an audience is required: tokens for other clients must not be accepted")
	}
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("discover OIDC issuer %s: %w", issuer, err)
	}
	return &OIDC{
		verifier:  provider.Verifier(&oidc.Config{ClientID: audience}),
		roleClaim: strings.Split(roleClaim, "."),
		tokenURL:  provider.Endpoint().TokenURL,
	}, nil
}

// TokenURL is the issuer's token endpoint, where sessions are refreshed.
func (o *OIDC) TokenURL() string { return o.tokenURL }

// Authenticate implements Authenticator.
func (o *OIDC) Authenticate(ctx context.Context, token string) (Principal, error) {
	tok, err := o.verifier.Verify(ctx, token)
	if err != nil {
		return Principal{}, err
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Principal{}, err
	}
	role, ok := strongest(claimStrings(claims, o.roleClaim))
	if !ok {
		return Principal{}, fmt.Errorf("token of %s carries no svcbridge role in %s", tok.Subject, strings.Join(o.roleClaim, "."))
	}
	subject := tok.Subject
	if name, ok := claims["preferred_username"].(string); ok && name != "" {
		subject = name
	}
	return Principal{Subject: subject, Role: role}, nil
}

// claimStrings follows path into claims and returns the string or strings
// found there.
func claimStrings(claims map[string]any, path []string) []string {
	var v any = claims
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
