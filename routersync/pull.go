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

	// last is what Wait last returned; behind: its document was read
	// after its sequence, which may not cover all of it.
	last   Desired
	behind bool
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
// change. The change sequence is read before the document, so
// acknowledging it after applying the document never covers a change the
// document lacks. A document that changed between the two reads may hold
// a change the sequence does not cover: the next Wait reads the sequence
// again before it waits, and answers the same document with the newer
// sequence, so that the change is acknowledged without another coming.
// Wait is not for concurrent use.
func (p *Pull) Wait(ctx context.Context, version string) (Desired, error) {
	recheck := p.behind && version != "" && version == p.last.Version
	for {
		// base is the document the sequence is read against: the long
		// poll's answer, or (rechecking) the last one returned.
		var base *answer
		ifNoneMatch := ""
		if recheck {
			ifNoneMatch = version
		} else if version != "" {
			a, err := p.longPoll(ctx, version)
			if err != nil {
				return Desired{}, err
			}
			base, ifNoneMatch = &a, a.etag
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
		got, err := p.router(ctx, "router", ifNoneMatch)
		if err != nil {
			return Desired{}, err
		}
		switch {
		case got.status != http.StatusNotModified:
			// Read first, or changed since the sequence was read.
			return p.answered(got, ch.LastUpdated, true)
		case base != nil:
			return p.answered(*base, ch.LastUpdated, false)
		case ch.LastUpdated != p.last.Seq:
			d := p.last
			d.Seq = ch.LastUpdated
			p.last, p.behind = d, false
			return d, nil
		}
		// The last answer was current: wait for a change.
		recheck, p.behind = false, false
	}
}

// answer is one answer of GET /agent/router.
type answer struct {
	status int
	etag   string
	body   []byte
}

// router reads the agent's router document at path (304 when
// ifNoneMatch names it).
func (p *Pull) router(ctx context.Context, path, ifNoneMatch string) (answer, error) {
	var h http.Header
	if ifNoneMatch != "" {
		h = http.Header{"If-None-Match": {ifNoneMatch}}
	}
	resp, body, err := p.do(ctx, http.MethodGet, path, h, nil)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, etag: resp.Header.Get("ETag"), body: body}, nil
}

// longPoll waits until the agent's router document is no longer version,
// and answers it.
func (p *Pull) longPoll(ctx context.Context, version string) (answer, error) {
	path := "router?timeoutSeconds=" + strconv.Itoa(int(p.LongPoll/time.Second))
	for {
		a, err := p.router(ctx, path, version)
		if err != nil || a.status != http.StatusNotModified {
			return a, err
		}
	}
}

// answered is the desired state of a document read with the sequence
// seq; behind: the document may hold changes seq does not cover.
func (p *Pull) answered(a answer, seq int64, behind bool) (Desired, error) {
	d := Desired{Seq: seq, Types: AgentTypes, Version: a.etag}
	if a.status == http.StatusNotFound {
		// routerMode none: the router holds nothing of svcbridge's.
		d.Version, d.NoRouter = noRouter, true
	} else {
		es, err := routerconfig.Entities(a.body)
		if err != nil {
			return Desired{}, err
		}
		if p.Management != "" {
			es = Localize(es, p.Management)
		}
		d.Entities = es
	}
	p.last, p.behind = d, behind
	return d, nil
}

// Report sends what the router applied.
func (p *Pull) Report(ctx context.Context, r Report) error {
	_, _, err := p.do(ctx, http.MethodPut, "router/status", nil, r)
	return err
}
