package routersync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"svcbridge/routerconfig"
)

// ErrUnauthorized is the control plane refusing the agent's token: revoked
// or rotated. The router keeps what it holds; a new token is needed.
var ErrUnauthorized = errors.New("the agent token was refused (revoked or rotated): give the sync the agent's current token")

// Pull is the source of an agent's router: its document from svcbridge's
// pull API, as the agent (its token), learning of changes by a long poll.
type Pull struct {
	Server string // base URL of the API
	Token  string
	Client *http.Client
	// LongPoll is how long one request waits for a change.
	LongPoll time.Duration
	// Management is where the router's management listens (host:port):
	// the document's management listener is pointed there (Localize).
	Management string
}

// noRouter is the version of the state "the agent has no router".
const noRouter = `"none"`

func (p *Pull) url(path string) string {
	return strings.TrimRight(p.Server, "/") + "/api/v3/agent/" + path
}

func (p *Pull) do(ctx context.Context, method, path string, header http.Header, body any) (*http.Response, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url(path), r)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, err
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, nil, ErrUnauthorized
	case resp.StatusCode >= 400 && resp.StatusCode != http.StatusNotFound:
		return nil, nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(out)))
	}
	return resp, out, nil
}

// Wait returns the agent's router once its version differs from version
// ("" for any): it waits up to LongPoll at a time on the server for a
// change. The change sequence is read before the document (a read after
// the long poll's, answered 304 while the document is the one it got), so
// acknowledging it after applying the document never covers a change the
// document lacks.
func (p *Pull) Wait(ctx context.Context, version string) (Desired, error) {
	// changed is the answer the long poll ended with: the document it
	// read is kept, unless a later change came before the sequence.
	var changed *http.Response
	var changedBody []byte
	for version != "" {
		h := http.Header{"If-None-Match": {version}}
		q := "router?timeoutSeconds=" + strconv.Itoa(int(p.LongPoll/time.Second))
		resp, body, err := p.do(ctx, http.MethodGet, q, h, nil)
		if err != nil {
			return Desired{}, err
		}
		if resp.StatusCode != http.StatusNotModified {
			changed, changedBody = resp, body
			break
		}
	}
	var ch struct {
		LastUpdated int64 `json:"lastUpdated"`
	}
	_, body, err := p.do(ctx, http.MethodGet, "config/changes", nil, nil)
	if err != nil {
		return Desired{}, err
	}
	if err := json.Unmarshal(body, &ch); err != nil {
		return Desired{}, fmt.Errorf("config/changes: %w", err)
	}
	var h http.Header
	if changed != nil {
		h = http.Header{"If-None-Match": {changed.Header.Get("ETag")}}
	}
	resp, body, err := p.do(ctx, http.MethodGet, "router", h, nil)
	if err != nil {
		return Desired{}, err
	}
	if resp.StatusCode == http.StatusNotModified {
		resp, body = changed, changedBody // what the long poll read is current
	}
	d := Desired{Seq: ch.LastUpdated, Types: AgentTypes, Version: resp.Header.Get("ETag")}
	if resp.StatusCode == http.StatusNotFound {
		// routerMode none: the router holds nothing of svcbridge's.
		d.Version, d.NoRouter = noRouter, true
		return d, nil
	}
	if d.Entities, err = routerconfig.Entities(body); err != nil {
		return Desired{}, err
	}
	if p.Management != "" {
		d.Entities = Localize(d.Entities, p.Management)
	}
	return d, nil
}

// Report sends what the router applied.
func (p *Pull) Report(ctx context.Context, r Report) error {
	_, _, err := p.do(ctx, http.MethodPut, "router/status", nil, r)
	return err
}
