package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"svcbridge/document"
)

// Tokens is a session as ioFog's clients (potctl, the ioFog Go SDK) keep
// it: they build one with /user/refresh or /user/login before every
// command.
type Tokens struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
}

// Errors of Sessions. ErrBadCredentials and ErrNoPasswordLogin are the
// caller's (401); any other error means the issuer could not answer.
var (
	ErrBadCredentials  = errors.New("invalid credentials")
	ErrNoPasswordLogin = errors.New("password login needs OIDC")
)

// Sessions answers the ioFog controller's session calls.
type Sessions struct {
	// Static accepts the tokens that never expire (a tokens file, dev's
	// admin token): refreshing one answers it back as both tokens, so a
	// client configured with it as its refresh token just works.
	Static Authenticator
	// Issuer refreshes and logs in at the OIDC issuer; nil without OIDC.
	Issuer *TokenEndpoint
}

// Refresh turns a refresh token into a session.
func (s Sessions) Refresh(ctx context.Context, refreshToken string) (Tokens, error) {
	if refreshToken == "" {
		return Tokens{}, ErrBadCredentials
	}
	if s.Static != nil {
		if _, err := s.Static.Authenticate(ctx, refreshToken); err == nil {
			return Tokens{AccessToken: refreshToken, RefreshToken: refreshToken}, nil
		}
	}
	if s.Issuer == nil {
		return Tokens{}, ErrBadCredentials
	}
	return s.Issuer.grant(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// Login turns a user's password (and one-time code, which Keycloak takes
// as `totp`) into a session through the issuer's password grant.
func (s Sessions) Login(ctx context.Context, email, password, totp string) (Tokens, error) {
	if s.Issuer == nil {
		return Tokens{}, ErrNoPasswordLogin
	}
	if email == "" || password == "" {
		return Tokens{}, ErrBadCredentials
	}
	form := url.Values{"grant_type": {"password"}, "username": {email}, "password": {password}, "scope": {"openid"}}
	if totp != "" {
		form.Set("totp", totp)
	}
	return s.Issuer.grant(ctx, form)
}

// TokenEndpoint is an OAuth 2 token endpoint and svcbridge's client there.
type TokenEndpoint struct {
	URL          string
	ClientID     string
	ClientSecret string // empty for a public client
	Client       *http.Client
}

// grant sends one token request (RFC 6749 §4.3, §6). It is written out
// rather than taken from golang.org/x/oauth2, whose password grant cannot
// carry Keycloak's `totp` parameter.
func (e *TokenEndpoint) grant(ctx context.Context, form url.Values) (Tokens, error) {
	form.Set("client_id", e.ClientID)
	if e.ClientSecret != "" {
		form.Set("client_secret", e.ClientSecret)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return Tokens{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	hc := e.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Tokens{}, fmt.Errorf("token endpoint: %w", err)
	}
	defer resp.Body.Close()
	var r struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &r)
	}
	switch {
	case resp.StatusCode == http.StatusOK && err == nil && r.AccessToken != "":
		if r.RefreshToken == "" {
			// The issuer may keep the refresh token as it is (RFC 6749 §6).
			r.RefreshToken = form.Get("refresh_token")
		}
		return Tokens{AccessToken: r.AccessToken, RefreshToken: r.RefreshToken}, nil
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized:
		// invalid_grant, unauthorized_client, ...: the reason is for the log.
		return Tokens{}, fmt.Errorf("%w: issuer says %s: %s", ErrBadCredentials, document.Printable(r.Error, 200), document.Printable(r.Description, 200))
	}
	return Tokens{}, fmt.Errorf("token endpoint answered %s", resp.Status)
}
