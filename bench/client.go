package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"svcbridge/routerconfig"
	"svcbridge/wire"
)

// client is what bench asks of the API: a base URL, a bearer token and
// one HTTP client. It is bench's own, not package cli's Client: the CLI's
// bench command imports this package.
type client struct {
	server, token string
	http          *http.Client
}

// APIError is an answer outside 2xx (and 304): its status and the body's
// name and message (wire.Error), said as the CLI says them.
type APIError struct {
	Status        int
	Name, Message string
}

func (e *APIError) Error() string {
	status := strconv.Itoa(e.Status)
	if e.Name != "" {
		status += " " + e.Name
	}
	return fmt.Sprintf("%s (%s)", cmp.Or(e.Message, http.StatusText(e.Status)), status)
}

// UnreachableError is a request that got no HTTP answer at all.
type UnreachableError struct {
	Server string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the svcbridge server at %s: %v", e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// notFound reports whether err is a 404 answer.
func notFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// failedError is a service whose reconcile failed: its name and
// provisioningError.
type failedError struct {
	service string
	message *string
}

func (e *failedError) Error() string {
	msg := ""
	if e.message != nil {
		msg = *e.message
	}
	return fmt.Sprintf("service %s failed: %s", e.service, msg)
}

// service is a Service as the API answers it.
type service wire.Service

// settled reports whether the last finished reconcile is of the latest
// change.
func (s service) settled() bool { return s.ObservedGeneration == s.Generation }

// ready reports whether the latest generation is ready; failed is an error.
func (s service) ready() (bool, error) {
	if !s.settled() {
		return false, nil
	}
	if s.ProvisioningStatus == "failed" {
		return false, &failedError{service: s.Name, message: s.ProvisioningError}
	}
	return s.ProvisioningStatus == "ready", nil
}

// agent is an agent as the API answers it; Token is set in a create's
// answer only.
type agent = wire.CreatedAgent

// routerDoc is the part of an agent's router document bench reads.
type routerDoc struct {
	Bridges struct {
		TCPListeners  map[string]routerconfig.Listener `json:"tcpListeners"`
		TCPConnectors map[string]json.RawMessage       `json:"tcpConnectors"`
	} `json:"bridges"`
}

func esc(s string) string { return url.PathEscape(s) }

// request is a request of the API, as the CLI sends it.
func (c *client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "svcbridge-cli")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// exchange sends one request (body: JSON, or nil) with the headers h and
// reads the whole answer into buf (emptied first; nil: a new one); it
// returns the status (2xx or 304, else an *APIError), the headers, the
// body (buf's bytes) and how long the exchange took. Reads timed one after
// another share a buffer: against an embedded server the bench shares its
// heap, and a fresh buffer grown to each 6 MB list would be garbage
// collected on the server's time.
func (c *client) exchange(ctx context.Context, method, path string, h http.Header, body []byte, buf *bytes.Buffer) (code int, header http.Header, out []byte, d time.Duration, err error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := c.request(ctx, method, path, r)
	if err != nil {
		return 0, nil, nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	t0 := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, nil, time.Since(t0), ctx.Err()
		}
		return 0, nil, nil, time.Since(t0), &UnreachableError{Server: c.server, Err: err}
	}
	defer resp.Body.Close()
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead) // read whole, EOF included, without growing
	}
	_, err = buf.ReadFrom(resp.Body)
	out, d = buf.Bytes(), time.Since(t0)
	if err != nil {
		return resp.StatusCode, nil, nil, d, &UnreachableError{Server: c.server, Err: err}
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotModified {
		return resp.StatusCode, resp.Header, out, d, apiError(resp.StatusCode, out)
	}
	return resp.StatusCode, resp.Header, out, d, nil
}

// apiError is the *APIError of an answer outside 2xx with body: the API's
// envelope, else the body's start.
func apiError(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	var w wire.Error
	err := json.Unmarshal(body, &w)
	e.Name, e.Message = w.Name, w.Message
	if err != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 300 {
			e.Message = e.Message[:300] + "…"
		}
	}
	return e
}

// call sends in (nil: no body) as JSON and decodes a 2xx answer into out
// (nil: not read).
func (c *client) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	_, _, raw, _, err := c.exchange(ctx, method, path, nil, body, nil)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: unexpected answer: %v", method, path, err)
	}
	return nil
}

func (c *client) listAgents(ctx context.Context) ([]agent, error) {
	var out []agent
	return out, c.call(ctx, http.MethodGet, "/api/v3/agents", nil, &out)
}

func (c *client) createAgent(ctx context.Context, fields map[string]any) (agent, error) {
	var a agent
	return a, c.call(ctx, http.MethodPost, "/api/v3/agents", fields, &a)
}

func (c *client) deleteAgent(ctx context.Context, ref string) error {
	return c.call(ctx, http.MethodDelete, "/api/v3/agents/"+esc(ref), nil, nil)
}

func (c *client) agentRouter(ctx context.Context, ref string) (routerDoc, error) {
	var rc routerDoc
	return rc, c.call(ctx, http.MethodGet, "/api/v3/agents/"+esc(ref)+"/router", nil, &rc)
}

func (c *client) getService(ctx context.Context, name string) (service, error) {
	var s service
	return s, c.call(ctx, http.MethodGet, "/api/v3/services/"+esc(name), nil, &s)
}

// longPoll is how long awaitService asks the server to wait for a change,
// within requestTimeout.
const longPoll = "20"

// awaitService reads service name: at once when etag is "", else once it
// differs from what etag named (a long poll; changed is false when the
// server's wait ended first). next is the answer's ETag: "" from a server
// before long polls, which is never asked one.
func (c *client) awaitService(ctx context.Context, name, etag string) (svc service, next string, changed bool, err error) {
	path := "/api/v3/services/" + esc(name)
	var h http.Header
	if etag != "" {
		path += "?timeoutSeconds=" + longPoll
		h = http.Header{"If-None-Match": {etag}}
	}
	code, header, body, _, err := c.exchange(ctx, http.MethodGet, path, h, nil, nil)
	if err != nil {
		return svc, "", false, err
	}
	if code == http.StatusNotModified {
		return svc, etag, false, nil
	}
	if err := json.Unmarshal(body, &svc); err != nil {
		return svc, "", false, fmt.Errorf("GET service %s: unexpected answer: %v", name, err)
	}
	return svc, header.Get("ETag"), true, nil
}

func (c *client) createService(ctx context.Context, fields map[string]any) error {
	return c.call(ctx, http.MethodPost, "/api/v3/services", fields, nil)
}

func (c *client) patchService(ctx context.Context, name string, fields map[string]any) error {
	return c.call(ctx, http.MethodPatch, "/api/v3/services/"+esc(name), fields, nil)
}

func (c *client) deleteService(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, "/api/v3/services/"+esc(name), nil, nil)
}
