package api

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"svcbridge/auth"
)

// Failed authentications from one address spend one budget, whether
// bearer tokens or /user/refresh: racing guesses get exactly the burst of
// 401s, then 429 with Retry-After, logged without the token. A token that
// succeeded before is never held back (agents behind one NAT keep
// polling); a credential never seen succeed waits for the refill.
func TestFailedAuthenticationsAreLimited(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		var logs lockedBuffer
		api, _, _ := newTestAPI(t, dialect, func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			o.Limits = DefaultLimits
			o.Limits.AuthFailureBurst, o.Limits.AuthFailuresPerMinute = 3, 0.01 // no refill within the test
		})
		api.Do("GET", "/api/v3/agents", nil).Want(200) // the admin's token succeeds once

		const guesses = 10
		codes := make([]int, guesses)
		var wg sync.WaitGroup
		for i := range guesses {
			wg.Go(func() {
				guess := fmt.Sprintf("guessed-token-%04d-xyz", i)
				var r *testResponse
				if i%2 == 0 {
					r = api.Do("GET", "/api/v3/agents", nil, bearer(guess)...)
				} else {
					r = api.JSON("POST", "/api/v3/user/refresh", map[string]string{"refreshToken": guess})
				}
				if r.Status == 429 && (r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "TooManyRequestsError")) {
					t.Errorf("429 without Retry-After or its name: %v %s", r.Header, r.Body)
				}
				codes[i] = r.Status
			})
		}
		wg.Wait()
		count := map[int]int{}
		for _, c := range codes {
			count[c]++
		}
		if count[401] != 3 || count[429] != guesses-3 {
			t.Errorf("racing guesses answered %v, want 3 × 401 and the rest 429", count)
		}
		api.Do("GET", "/api/v3/agents", nil).Want(200)                                     // trusted: it succeeded before
		api.Do("GET", "/api/v3/agents", nil, bearer(testTokens[auth.Viewer])...).Want(429) // never seen: waits like a guess
		if strings.Contains(logs.String(), "guessed-token") || !strings.Contains(logs.String(), "authentication refused") {
			t.Errorf("refusals logged with the token, or not at all:\n%s", logs.String())
		}
	})
}

// A client's concurrent first requests with one token are one guess: none
// waits for another to prove the token good, however many they are beyond
// the burst (a bench, the CLI's parallel reads, a fleet's first polls).
func TestConcurrentFirstRequestsOfOneTokenAreOneGuess(t *testing.T) {
	api, _, _ := newTestAPI(t, "sqlite", func(o *Options) {
		o.Limits = DefaultLimits
		o.Limits.AuthFailureBurst, o.Limits.AuthFailuresPerMinute = 3, 0.01
	})
	const requests = 30
	codes := make([]int, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() { codes[i] = api.Do("GET", "/api/v3/agents", nil).Status })
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d of one token's first %d answered %d, want 200", i, requests, c)
		}
	}
}

// A failure spends its credential's budget and its address's: a spent
// credential waits anywhere, a new credential waits at a spent address
// only, and a credential that succeeded never waits.
func TestAuthLimiterBudgets(t *testing.T) {
	l := newAuthLimiter(Limits{AuthFailuresPerMinute: 60, AuthFailureBurst: 2})
	now := time.Now()
	attempt := func(address, token string) authAttempt {
		return authAttempt{address: address, account: sha256.Sum256([]byte(token)), secret: sha256.Sum256([]byte(token))}
	}
	settle := func(address, token string, ok bool) {
		a := attempt(address, token)
		if w := l.admit(&a, now); w != 0 {
			t.Fatalf("%s from %s not admitted (%v)", token, address, w)
		}
		l.settle(&a, ok, now)
	}
	settle("10.0.0.1", "good", true)
	settle("10.0.0.1", "stale", false)
	settle("10.0.0.1", "stale", false)
	for _, c := range []struct {
		address, token string
		at             time.Duration
		want           time.Duration
	}{
		{"10.0.0.1", "stale", 0, time.Second}, // 60 a minute: one a second
		{"10.0.0.2", "stale", 0, time.Second},
		{"10.0.0.1", "new", 0, time.Second},
		{"10.0.0.2", "new", 0, 0},
		{"10.0.0.1", "good", 0, 0},
		{"10.0.0.1", "stale", time.Second, 0},
	} {
		a := attempt(c.address, c.token)
		got := l.admit(&a, now.Add(c.at))
		l.release(&a) // only asked
		if got != c.want {
			t.Errorf("%s from %s after %v waits %v, want %v", c.token, c.address, c.at, got, c.want)
		}
	}
}

func TestClientAddress(t *testing.T) {
	for ip, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"::ffff:192.0.2.7":     "::ffff:192.0.2.7",
		"":                     "",
	} {
		if got := clientAddress(ip); got != want {
			t.Errorf("clientAddress(%q) = %q, want %q", ip, got, want)
		}
	}
}

func TestRefill(t *testing.T) {
	for _, c := range []struct {
		tokens float64
		limit  rate.Limit
		want   time.Duration
	}{
		{1, 1, 0}, {2.5, 1, 0}, {0, 1, time.Second}, {0.5, 1, 500 * time.Millisecond}, {-1, 1, 2 * time.Second}, {0, 10.0 / 60, 6 * time.Second},
	} {
		if got := refill(c.tokens, c.limit); got != c.want {
			t.Errorf("refill(%v, %v) = %v, want %v", c.tokens, c.limit, got, c.want)
		}
	}
}
