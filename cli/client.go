// Package cli is svcbridge's command-line client: a small typed client of
// the REST API (Client) and the cobra commands built on it (Commands):
// apply, get, describe, delete, reconcile, status and bench.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"svcbridge/routerconfig"
	"svcbridge/wire"
)

// Client calls svcbridge's REST API. The zero HTTP uses a client with a 30 s
// timeout per request.
type Client struct {
	// Server is the base URL, e.g. http://127.0.0.1:8080.
	Server string
	// Token, when set, is sent as `Authorization: Bearer <token>`.
	Token string
	HTTP  *http.Client
	// DryRun sends every write with ?dryRun=true: the server checks it
	// and answers what it would do, storing nothing (see CheckDryRun).
	DryRun bool
	// Warnings, when set, receives the text of every Warning header of
	// an answer (what a change would break), as kubectl prints them.
	Warnings io.Writer
	// lastWrite is the body of the latest 2xx answer to a dry-run write,
	// for diff: what the object would be.
	lastWrite []byte
	// unauthorized, when set, is added to a 401's message: where the
	// token came from, and what to do.
	unauthorized string
	// Context names the context of the configuration file that Server
	// came from ("" when none did), for the errors to name.
	Context string
}

// APIError is an answer of the API outside 2xx: its HTTP status and the
// body's name and message (wire.Error).
type APIError struct {
	Status        int
	Name, Message string
	// Method and Path say which request it answered.
	Method, Path string
	// Hint, when set, says what to do about it.
	Hint string
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Name != "" {
		msg = fmt.Sprintf("%s (%d %s)", msg, e.Status, e.Name)
	} else {
		msg = fmt.Sprintf("%s (%d)", msg, e.Status)
	}
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// NotFound reports whether err is a 404 answer.
func NotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// UnreachableError is a request that got no HTTP answer at all. Context
// is the context the server came from, if one did.
type UnreachableError struct {
	Server, Context string
	Err             error
}

func (e *UnreachableError) Error() string {
	if e.Context != "" {
		// The server is named: of the request's error, the cause.
		cause := e.Err
		var ue *url.Error
		if errors.As(cause, &ue) {
			cause = ue.Err
		}
		return fmt.Sprintf("context %s (%s): cannot reach its svcbridge server: %v (is it running? 'svcbridge config get-contexts' lists the contexts; --context NAME picks another)",
			e.Context, e.Server, cause)
	}
	return fmt.Sprintf("cannot reach the svcbridge server at %s: %v (set --server or SVCBRIDGE_SERVER)", e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// ---- API objects ----
//
// The API's answers are the types of package wire; the names here are the
// client's, with what it keeps beside them (Raw: the answer as it was, so
// that -o json|yaml prints every field, including ones this client does
// not know).

// Service is a Service as the API answers it, with Raw.
type Service struct {
	wire.Service
	Raw json.RawMessage `json:"-"`
}

// Settled reports whether the last finished reconcile is of the latest
// change.
func (s Service) Settled() bool { return s.ObservedGeneration == s.Generation }

// ErrorText is the provisioningError, or "".
func (s Service) ErrorText() string {
	if s.ProvisioningError == nil {
		return ""
	}
	return *s.ProvisioningError
}

// KubernetesOptions is spec.kubernetes, each option as the server sent
// it; nil when there is none.
func (s Service) KubernetesOptions() map[string]json.RawMessage {
	var opts map[string]json.RawMessage
	json.Unmarshal(s.Kubernetes, &opts) // absent or null: none
	return opts
}

// Agents counts the agents that listen for s, of those that should: those
// wanted, plus any still listening that is not.
func (s Service) Agents() (listening, total int) {
	for _, e := range s.Distribution {
		if wanted(e.Wanted) || e.Listening {
			total++
		}
		if e.Listening && wanted(e.Wanted) {
			listening++
		}
	}
	return listening, total
}

// DistributionEntry is one agent of a service's distribution.
type DistributionEntry = wire.DistributionEntry

// Agent is an agent as the API answers it; Token is set in a create's
// answer only.
type Agent struct {
	wire.CreatedAgent
	Raw json.RawMessage `json:"-"`
}

// Microservice is a microservice as the API answers it.
type Microservice struct {
	wire.Microservice
	Raw json.RawMessage `json:"-"`
}

// RouterConfig is the part of an agent's router document the CLI reads.
type RouterConfig struct {
	Bridges struct {
		TCPListeners  map[string]routerconfig.Listener `json:"tcpListeners"`
		TCPConnectors map[string]json.RawMessage       `json:"tcpConnectors"`
	} `json:"bridges"`
	Raw json.RawMessage `json:"-"`
}

// ---- transport ----

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// defaultHTTP keeps a connection for each of --wait's long polls.
var defaultHTTP = &http.Client{Timeout: 30 * time.Second, Transport: keepConnections(maxLongPolls)}

// keepConnections is Go's default transport keeping n idle connections
// to a server, where it keeps 2.
func keepConnections(n int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = n
	return t
}

// do sends one request and returns the body of a 2xx answer, an *APIError
// otherwise, or an *UnreachableError when no answer came.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte) (int, []byte, error) {
	code, _, out, err := c.roundTrip(ctx, method, path, contentType, body, nil)
	return code, out, err
}

// roundTrip is do with the request's extra headers h, and the answer's
// headers; a 304 (to an If-None-Match in h) is no error.
func (c *Client) roundTrip(ctx context.Context, method, path, contentType string, body []byte, h http.Header) (int, http.Header, []byte, error) {
	if c.DryRun && method != http.MethodGet {
		path = withQuery(path, "dryRun", "true")
	}
	resp, err := c.send(ctx, method, path, contentType, "application/json", body, h)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, nil, &UnreachableError{Server: c.Server, Context: c.Context, Err: err}
	}
	c.printWarnings(resp.Header)
	if c.DryRun && method != http.MethodGet && resp.StatusCode/100 == 2 && resp.Header.Get("X-Dry-Run") != "true" {
		return resp.StatusCode, resp.Header, out, fmt.Errorf("%s %s: the server did not answer as a dry run: it may have made the change", method, path)
	}
	// Only dry runs (diff) record it: bench's clients write at once.
	if c.DryRun && method != http.MethodGet && resp.StatusCode/100 == 2 {
		c.lastWrite = out
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotModified {
		return resp.StatusCode, resp.Header, out, c.apiError(resp.StatusCode, method, path, out)
	}
	return resp.StatusCode, resp.Header, out, nil
}

// printWarnings writes each Warning header's text to c.Warnings as
// "Warning: text" (a value not of the form 299 - "text" as it came).
func (c *Client) printWarnings(h http.Header) {
	if c.Warnings == nil {
		return
	}
	for _, v := range h.Values("Warning") {
		fmt.Fprintf(c.Warnings, "Warning: %s\n", warningText(v))
	}
}

// warningText is the text of a Warning header value `code agent "text"`
// (svcbridge's agent is "-"), unquoted; any other value as is.
func warningText(v string) string {
	parts := strings.SplitN(v, " ", 3)
	if len(parts) != 3 {
		return v
	}
	if text, err := strconv.Unquote(parts[2]); err == nil {
		return text
	}
	return v
}

// send sends one request; an answer that never came is an
// *UnreachableError (or ctx's error).
func (c *Client) send(ctx context.Context, method, path, contentType, accept string, body []byte, h http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Server, "/")+path, r)
	if err != nil {
		return nil, fmt.Errorf("invalid server URL %q: %w", c.Server, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "svcbridge-cli")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UnreachableError{Server: c.Server, Context: c.Context, Err: err}
	}
	return resp, nil
}

// apiError is the *APIError of an answer outside 2xx with body: the API's
// envelope, else the body's start; a 401 gets the client's hint.
func (c *Client) apiError(status int, method, path string, body []byte) *APIError {
	e := &APIError{Status: status, Method: method, Path: path}
	if status == http.StatusUnauthorized {
		e.Hint = c.unauthorized
	}
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

// listPageSize is how many items the CLI asks for per page of a list.
const listPageSize = 500

// listAll reads every page of a list route (?limit=, then ?continue= with
// the X-Continue token of each answer), as kubectl does, until a page
// comes without a token.
func (c *Client) listAll(ctx context.Context, path string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	q := url.Values{"limit": {strconv.Itoa(listPageSize)}}
	for {
		_, header, body, err := c.roundTrip(ctx, http.MethodGet, withQueryOf(path, q.Encode()), "", nil, nil)
		if err != nil {
			return nil, err
		}
		page, err := listPage(body)
		if err != nil {
			return nil, fmt.Errorf("GET %s: unexpected answer: %v", path, err)
		}
		out = append(out, page...)
		next := header.Get("X-Continue")
		if next == "" {
			return out, nil
		}
		q.Set("continue", next)
	}
}

// listPage reads a page of a list: a JSON array, or an object holding
// one, as {"microservices": [...]} (the reference controller's shape, in
// which the server answers GET /microservices for the ioFog clients'
// reads; its other lists are bare arrays).
func listPage(body []byte) ([]json.RawMessage, error) {
	var page []json.RawMessage
	arrayErr := json.Unmarshal(body, &page)
	if arrayErr == nil {
		return page, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || len(obj) != 1 {
		return nil, arrayErr
	}
	for _, list := range obj {
		if err := json.Unmarshal(list, &page); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// getJSON GETs path into v and returns the raw answer.
func (c *Client) getJSON(ctx context.Context, path string, v any) ([]byte, error) {
	_, body, err := c.do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("GET %s: unexpected answer: %v", path, err)
	}
	return body, nil
}

func (c *Client) sendJSON(ctx context.Context, method, path string, in, out any) (int, []byte, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return 0, nil, err
	}
	code, body, err := c.do(ctx, method, path, "application/json", b)
	if err != nil {
		return code, body, err
	}
	if out != nil && len(body) > 0 {
		if err := json.Unmarshal(body, out); err != nil {
			return code, body, fmt.Errorf("%s %s: unexpected answer: %v", method, path, err)
		}
	}
	return code, body, nil
}

// upload sends doc as the file of a multipart field.
func (c *Client) upload(ctx context.Context, method, path, field string, doc []byte) (int, []byte, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile(field, field+".yaml")
	if err != nil {
		return 0, nil, err
	}
	fw.Write(doc)
	if err := mw.Close(); err != nil {
		return 0, nil, err
	}
	return c.do(ctx, method, path, mw.FormDataContentType(), buf.Bytes())
}

func esc(s string) string { return url.PathEscape(s) }

// withQuery adds key=value to path's query.
func withQuery(path, key, value string) string {
	return withQueryOf(path, url.QueryEscape(key)+"="+url.QueryEscape(value))
}

// withQueryOf is path with query, encoded, added to the query it has.
func withQueryOf(path, query string) string {
	if strings.Contains(path, "?") {
		return path + "&" + query
	}
	return path + "?" + query
}

// CheckDryRun checks, before any dry-run write, that the server is
// svcbridge, which honours ?dryRun=: the reference ioFog controller
// serves the same write routes and would ignore the parameter and write.
// Every answer of svcbridge's, an error too, carries X-Svcbridge-Version.
func (c *Client) CheckDryRun(ctx context.Context) error {
	ok, err := c.isSvcbridge(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("the server at %s is not svcbridge (no X-Svcbridge-Version header): it would ignore --dry-run=server and write; nothing was sent", c.Server)}
	}
	return nil
}

// isSvcbridge reports whether the server answers as svcbridge: every
// answer of svcbridge's, an error too, carries X-Svcbridge-Version.
func (c *Client) isSvcbridge(ctx context.Context) (bool, error) {
	resp, err := c.send(ctx, http.MethodGet, "/healthz", "", "application/json", nil, nil)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.Header.Get("X-Svcbridge-Version") != "", nil
}

// ---- services ----

func decodeService(raw []byte) (Service, error) {
	var s Service
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("unexpected service answer: %v", err)
	}
	s.Raw = raw
	return s, nil
}

// ListServices lists the services, sorted by name.
func (c *Client) ListServices(ctx context.Context) ([]Service, error) {
	raws, err := c.listAll(ctx, "/api/v3/services")
	if err != nil {
		return nil, err
	}
	out := make([]Service, 0, len(raws))
	for _, r := range raws {
		s, err := decodeService(r)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// GetService reads one service, with its distribution.
func (c *Client) GetService(ctx context.Context, name string) (Service, error) {
	svc, _, _, err := c.AwaitService(ctx, name, "", 0)
	return svc, err
}

// AwaitService reads service name; with the ETag of an earlier read and a
// wait of a second or more, a long poll: the answer comes once the service
// no longer shows what etag named, or after wait (whole seconds) with
// changed false. next is the answer's ETag ("" from a server before long
// polls, which is never asked one).
func (c *Client) AwaitService(ctx context.Context, name, etag string, wait time.Duration) (svc Service, next string, changed bool, err error) {
	path := "/api/v3/services/" + esc(name)
	var h http.Header
	if etag != "" && wait >= time.Second {
		path += "?timeoutSeconds=" + strconv.Itoa(int(wait/time.Second))
		h = http.Header{"If-None-Match": {etag}}
	}
	code, header, body, err := c.roundTrip(ctx, http.MethodGet, path, "", nil, h)
	if err != nil {
		return Service{}, "", false, err
	}
	if code == http.StatusNotModified {
		return Service{}, etag, false, nil
	}
	svc, err = decodeService(body)
	return svc, header.Get("ETag"), true, err
}

// CreateServiceYAML creates a service from one kind: Service document.
func (c *Client) CreateServiceYAML(ctx context.Context, doc []byte) (Service, error) {
	_, body, err := c.upload(ctx, http.MethodPost, "/api/v3/services/yaml", "service", doc)
	if err != nil {
		return Service{}, err
	}
	return decodeService(body)
}

// ReplaceServiceYAML makes the service named name the document doc (the
// whole desired document). A dry run answers the service it would make;
// a real one nothing (the zero Service).
func (c *Client) ReplaceServiceYAML(ctx context.Context, name string, doc []byte) (Service, error) {
	_, body, err := c.upload(ctx, http.MethodPatch, "/api/v3/services/yaml/"+esc(name), "service", doc)
	if err != nil || len(body) == 0 {
		return Service{}, err
	}
	return decodeService(body)
}

// CreateServiceOnPort creates a service on the bridge port it asks for
// (?bridgePort=): a 400 or 409 names the port when it is outside the
// range or taken.
func (c *Client) CreateServiceOnPort(ctx context.Context, fields map[string]any, bridgePort int) (Service, error) {
	path := withQuery("/api/v3/services", "bridgePort", strconv.Itoa(bridgePort))
	_, body, err := c.sendJSON(ctx, http.MethodPost, path, fields, nil)
	if err != nil {
		return Service{}, err
	}
	return decodeService(body)
}

// DeleteService deletes a service; its workflow removes its router objects.
func (c *Client) DeleteService(ctx context.Context, name string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/v3/services/"+esc(name), "", nil)
	return err
}

// ReconcileService asks for a reconcile and returns the request's number.
func (c *Client) ReconcileService(ctx context.Context, name string) (int64, error) {
	_, body, err := c.do(ctx, http.MethodPost, "/api/v3/services/"+esc(name)+"/reconcile", "", nil)
	if err != nil {
		return 0, err
	}
	var a wire.ReconcileAccepted
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, fmt.Errorf("unexpected reconcile answer: %v", err)
	}
	return a.ReconcileRequest, nil
}

// ---- agents ----

func decodeAgent(raw []byte) (Agent, error) {
	var a Agent
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("unexpected agent answer: %v", err)
	}
	a.Raw = raw
	return a, nil
}

// ListAgents lists the agents.
func (c *Client) ListAgents(ctx context.Context) ([]Agent, error) {
	raws, err := c.listAll(ctx, "/api/v3/agents")
	if err != nil {
		return nil, err
	}
	out := make([]Agent, 0, len(raws))
	for _, r := range raws {
		a, err := decodeAgent(r)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// GetAgent reads an agent by name or uuid.
func (c *Client) GetAgent(ctx context.Context, ref string) (Agent, error) {
	_, body, err := c.do(ctx, http.MethodGet, "/api/v3/agents/"+esc(ref), "", nil)
	if err != nil {
		return Agent{}, err
	}
	return decodeAgent(body)
}

// ApplyAgentYAML creates or replaces an agent from a kind: Agent or
// AgentConfig document; created reports a create (whose answer carries the
// agent's token, shown once).
func (c *Client) ApplyAgentYAML(ctx context.Context, doc []byte) (a Agent, created bool, err error) {
	code, body, err := c.upload(ctx, http.MethodPost, "/api/v3/agents/yaml", "agent", doc)
	if err != nil {
		return Agent{}, false, err
	}
	a, err = decodeAgent(body)
	return a, code == http.StatusCreated, err
}

// CreateAgent creates an agent from its JSON fields.
func (c *Client) CreateAgent(ctx context.Context, fields map[string]any) (Agent, error) {
	_, body, err := c.sendJSON(ctx, http.MethodPost, "/api/v3/agents", fields, nil)
	if err != nil {
		return Agent{}, err
	}
	return decodeAgent(body)
}

// PatchAgent changes the given fields of an agent.
func (c *Client) PatchAgent(ctx context.Context, ref string, fields map[string]any) error {
	_, _, err := c.sendJSON(ctx, http.MethodPatch, "/api/v3/agents/"+esc(ref), fields, nil)
	return err
}

// DeleteAgent deletes an agent.
func (c *Client) DeleteAgent(ctx context.Context, ref string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/v3/agents/"+esc(ref), "", nil)
	return err
}

// RotateAgentToken gives an agent a new credential (the old one stops
// working) and returns it.
func (c *Client) RotateAgentToken(ctx context.Context, ref string) (wire.AgentToken, error) {
	var out wire.AgentToken
	_, body, err := c.do(ctx, http.MethodPost, "/api/v3/agents/"+esc(ref)+"/token", "", nil)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Token == "" {
		return out, fmt.Errorf("POST /api/v3/agents/%s/token: unexpected answer: %s", ref, body)
	}
	return out, nil
}

// AgentRouter reads an agent's router config document.
func (c *Client) AgentRouter(ctx context.Context, ref string) (RouterConfig, error) {
	var rc RouterConfig
	raw, err := c.getJSON(ctx, "/api/v3/agents/"+esc(ref)+"/router", &rc)
	rc.Raw = raw
	return rc, err
}

// ---- microservices ----

func decodeMicroservice(raw []byte) (Microservice, error) {
	var m Microservice
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("unexpected microservice answer: %v", err)
	}
	m.Raw = raw
	return m, nil
}

// ListMicroservices lists the microservices.
func (c *Client) ListMicroservices(ctx context.Context) ([]Microservice, error) {
	return c.listMicroservices(ctx, "/api/v3/microservices")
}

// MicroserviceNamed reads the microservice of application app named name
// (found: there is one), asking the server for that one: a file of many
// is not a list of them all for each. A server before ?name= refuses it
// (400), and is asked for the application's.
func (c *Client) MicroserviceNamed(ctx context.Context, app, name string) (m Microservice, found bool, err error) {
	ofApp := withQuery("/api/v3/microservices", "application", app)
	ms, err := c.listMicroservices(ctx, withQuery(ofApp, "name", name))
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		ms, err = c.listMicroservices(ctx, ofApp)
	}
	for _, m := range ms {
		if m.Application == app && m.Name == name {
			return m, true, err
		}
	}
	return Microservice{}, false, err
}

func (c *Client) listMicroservices(ctx context.Context, path string) ([]Microservice, error) {
	raws, err := c.listAll(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make([]Microservice, 0, len(raws))
	for _, r := range raws {
		m, err := decodeMicroservice(r)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// CreateMicroservice creates a microservice from its JSON fields.
func (c *Client) CreateMicroservice(ctx context.Context, fields map[string]any) (Microservice, error) {
	_, body, err := c.sendJSON(ctx, http.MethodPost, "/api/v3/microservices", fields, nil)
	if err != nil {
		return Microservice{}, err
	}
	return decodeMicroservice(body)
}

// PatchMicroservice changes the given fields of a microservice.
func (c *Client) PatchMicroservice(ctx context.Context, uuid string, fields map[string]any) (Microservice, error) {
	_, body, err := c.sendJSON(ctx, http.MethodPatch, "/api/v3/microservices/"+esc(uuid), fields, nil)
	if err != nil {
		return Microservice{}, err
	}
	return decodeMicroservice(body)
}

// CheckToken checks that the server accepts the token, with the
// smallest read a user may make.
func (c *Client) CheckToken(ctx context.Context) error {
	_, _, err := c.do(ctx, http.MethodGet, "/api/v3/services?limit=1", "", nil)
	return err
}

// ServerVersion is svcbridge's build version as the server reports it in
// GET /api/v3/status (versions.svcbridge).
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	var st wire.Status
	_, err := c.getJSON(ctx, "/api/v3/status", &st)
	return st.Versions.Svcbridge, err
}

// Settings reads the settings the server runs with that a client needs
// (its tag prefix, bridge ports range and control plane).
func (c *Client) Settings(ctx context.Context) (wire.Settings, error) {
	var s wire.Settings
	_, err := c.getJSON(ctx, "/api/v3/settings", &s)
	return s, err
}

// Readyz reads the server's readiness report; Worker says whether a
// worker polls the task queue ("" when the server cannot tell).
func (c *Client) Readyz(ctx context.Context) (wire.Readiness, error) {
	var r wire.Readiness
	_, err := c.getJSON(ctx, "/readyz", &r)
	return r, err
}

// AgentServices lists what an agent's router listens for, or should.
func (c *Client) AgentServices(ctx context.Context, ref string) ([]wire.AgentService, error) {
	var out []wire.AgentService
	_, err := c.getJSON(ctx, "/api/v3/agents/"+esc(ref)+"/services", &out)
	return out, err
}

// DeleteMicroservice deletes a microservice by uuid.
func (c *Client) DeleteMicroservice(ctx context.Context, uuid string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/v3/microservices/"+esc(uuid), "", nil)
	return err
}
