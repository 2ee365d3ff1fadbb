package api

// Shared test harness of the api package: a real store (SQLite or
// PostgreSQL, via storetest) behind the real handler on an httptest.Server,
// with a Reconciler that only records what it was asked to do (the
// reconcile itself is tested with the workflows).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"svcbridge/auth"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/workflows"
)

// forEachDialect runs f as a parallel subtest per store dialect.
func forEachDialect(t *testing.T, f func(t *testing.T, dialect string)) {
	t.Helper()
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// recordingReconciler records the reconciles the handlers trigger.
type recordingReconciler struct {
	mu       sync.Mutex
	services []string
	agents   [][]string
	err      error
}

func (r *recordingReconciler) ServiceChanged(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.services = append(r.services, name)
	return r.err
}

func (r *recordingReconciler) ServiceCreated(ctx context.Context, name string) error {
	return r.ServiceChanged(ctx, name)
}

func (r *recordingReconciler) AgentsQueued(_ context.Context, uuids ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agents = append(r.agents, slices.Clone(uuids))
	return r.err
}

// FailWith makes later calls return err (and still record them), to test
// that a failed trigger does not fail the request.
func (r *recordingReconciler) FailWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// Services returns the names passed to ServiceChanged, in call order.
func (r *recordingReconciler) Services() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.services)
}

// AgentCalls returns the arguments of each AgentsQueued call.
func (r *recordingReconciler) AgentCalls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, len(r.agents))
	for i, a := range r.agents {
		out[i] = slices.Clone(a)
	}
	return out
}

// Agents returns every uuid passed to AgentsQueued, in call order.
func (r *recordingReconciler) Agents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.agents {
		out = append(out, a...)
	}
	return out
}

// Calls counts the calls of both methods.
func (r *recordingReconciler) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.services) + len(r.agents)
}

// Reset forgets the calls recorded so far.
func (r *recordingReconciler) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.services, r.agents = nil, nil
}

// testAPI is the API under test, served over real HTTP.
type testAPI struct {
	t   testing.TB
	srv *httptest.Server
}

// Test users' tokens, one per role; requests carry the admin's unless they
// set Authorization themselves.
// testIDs is the installation whose workflow IDs the API shows.
var testIDs = workflows.IDs{Prefix: "test/"}

var testTokens = map[auth.Role]string{
	auth.Admin: "test-admin-token-0001", auth.SRE: "test-sre-token-00001",
	auth.Developer: "test-developer-token", auth.Viewer: "test-viewer-token-01",
}

func testAuth() auth.Authenticator {
	var entries []auth.StaticToken
	for role, token := range testTokens {
		entries = append(entries, auth.StaticToken{Name: string(role), Role: string(role), Token: token})
	}
	a, err := auth.NewStatic(entries...)
	if err != nil {
		panic(err)
	}
	return a
}

// newTestAPI serves the API on a fresh store of the dialect. Defaults: a
// remote control plane, bridge ports 10024-65535, the default tag prefix;
// opts change them before New.
func newTestAPI(t testing.TB, dialect string, opts ...func(*Options)) (*testAPI, *store.Store, *recordingReconciler) {
	t.Helper()
	st := storetest.Open(t, dialect)
	rec := &recordingReconciler{}
	o := testOptions(st, rec)
	for _, opt := range opts {
		opt(&o)
	}
	return serveTestAPI(t, o), st, rec
}

// testOptions are newTestAPI's defaults, on st.
func testOptions(st *store.Store, rec Reconciler) Options {
	return Options{
		Store:          st,
		Reconciler:     rec,
		IDs:            testIDs,
		ControlPlane:   service.ControlPlaneRemote,
		BridgePorts:    store.PortRange{First: 10024, Last: 65535},
		BridgePortsRaw: "10024-65535",
		Tags:           service.TagRule{Prefix: service.DefaultTagPrefix},
		Logger:         slog.New(slog.DiscardHandler),
		Auth:           testAuth(),
		Sessions:       auth.Sessions{Static: testAuth()},
	}
}

// serveTestAPI serves the API configured by o.
func serveTestAPI(t testing.TB, o Options) *testAPI {
	srv := httptest.NewServer(New(o))
	t.Cleanup(srv.Close)
	client := srv.Client() // the server's one client, used by every test request
	client.Transport = asAdmin{client.Transport}
	// A redirect is an answer to check, as any other.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &testAPI{t: t, srv: srv}
}

// asAdmin sends the admin's token with user requests that carry no
// Authorization of their own; the agents' pull API gets none.
type asAdmin struct{ base http.RoundTripper }

func (a asAdmin) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, set := r.Header["Authorization"]; !set && !strings.HasPrefix(r.URL.Path, "/api/v3/agent/") {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+testTokens[auth.Admin])
	}
	return a.base.RoundTrip(r)
}

// URL is the server's base URL.
func (a *testAPI) URL() string { return a.srv.URL }

// testResponse is a fully read response.
type testResponse struct {
	t      testing.TB
	req    string
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a request; header is name, value pairs.
func (a *testAPI) Do(method, path string, body io.Reader, header ...string) *testResponse {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &testResponse{t: a.t, req: method + " " + path, Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// PostAtOnce posts n JSON bodies to path in parallel, released together so
// they race, and returns the answers in body order.
func (a *testAPI) PostAtOnce(path string, n int, body func(i int) string) []*testResponse {
	out := make([]*testResponse, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			resp, err := a.srv.Client().Post(a.URL()+path, "application/json", strings.NewReader(body(i)))
			if err != nil {
				out[i] = &testResponse{Status: -1, Body: []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out[i] = &testResponse{Status: resp.StatusCode, Body: b}
		})
	}
	close(start)
	wg.Wait()
	for _, r := range out {
		r.t, r.req = a.t, "POST "+path
	}
	return out
}

// JSON sends body as application/json: a string or []byte as is, nil as
// no body, anything else marshalled.
func (a *testAPI) JSON(method, path string, body any, header ...string) *testResponse {
	a.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			a.t.Fatalf("marshal %T: %v", body, err)
		}
		r = bytes.NewReader(enc)
	}
	return a.Do(method, path, r, append([]string{"Content-Type", "application/json"}, header...)...)
}

// Upload sends content as the file of a multipart/form-data field.
func (a *testAPI) Upload(method, path, field, content string, header ...string) *testResponse {
	a.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, err := w.CreateFormFile(field, field+".yaml")
	if err == nil {
		_, err = io.WriteString(fw, content)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		a.t.Fatalf("build multipart body: %v", err)
	}
	return a.Do(method, path, &buf, append([]string{"Content-Type", w.FormDataContentType()}, header...)...)
}

// bearer is the header pair of an agent's credential.
func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// Want fails the test unless the status is status.
func (r *testResponse) Want(status int) *testResponse {
	r.t.Helper()
	if r.Status != status {
		r.t.Fatalf("%s: status %d, want %d; body: %s", r.req, r.Status, status, r.Body)
	}
	return r
}

// Decode unmarshals the JSON body into v.
func (r *testResponse) Decode(v any) *testResponse {
	r.t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		r.t.Fatalf("%s: decode %s: %v", r.req, r.Body, err)
	}
	return r
}

// Map decodes the body as a JSON object.
func (r *testResponse) Map() map[string]any {
	r.t.Helper()
	var m map[string]any
	r.Decode(&m)
	return m
}

// WantError fails unless the response is status with exactly the error
// envelope {"name": name, "message": message}.
func (r *testResponse) WantError(status int, name, message string) {
	r.t.Helper()
	r.Want(status)
	var e map[string]any
	r.Decode(&e)
	want := map[string]any{"name": name, "message": message}
	if len(e) != 2 || e["name"] != name || e["message"] != message {
		r.t.Fatalf("%s: error body %s\nwant %v", r.req, r.Body, want)
	}
}
