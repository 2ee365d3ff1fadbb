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
	"svcbridge/store"
)

// Failed token authentications from one address spend its budget,
// bearer tokens and /user/refresh alike: racing guesses get exactly the
// burst of 401s, then 429 with Retry-After, logged without the token. A
// valid token is never held back for them, whether it succeeded before
// or is used for the first time.
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
		api.Do("GET", "/api/v3/agents", nil).Want(200)                                     // it succeeded before
		api.Do("GET", "/api/v3/agents", nil, bearer(testTokens[auth.Viewer])...).Want(200) // never seen: still its owner's
		api.JSON("POST", "/api/v3/user/refresh", map[string]string{"refreshToken": testTokens[auth.SRE]}).Want(200)
		api.Do("GET", "/api/v3/agents", nil, bearer("guessed-token-9999-xyz")...).Want(429)
		if strings.Contains(logs.String(), "guessed-token") || !strings.Contains(logs.String(), "authentication refused") {
			t.Errorf("refusals logged with the token, or not at all:\n%s", logs.String())
		}
	})
}

// A guesser at the address every client shares (an Ingress's) spends its
// budget; a new agent's token, a token never used and the agents' polls
// still pass, and an agent's token tried on a user route (a client's
// mistake, not a guess) spends nothing and keeps working where it
// belongs.
func TestAGuesserLocksNobodyOut(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect, func(o *Options) {
			o.Limits = DefaultLimits
			o.Limits.AuthFailureBurst, o.Limits.AuthFailuresPerMinute = 3, 0.01
		})
		old := createAgent(t, api, map[string]any{"name": "old"})
		for i := range 10 {
			api.Do("GET", "/api/v3/services", nil, bearer(fmt.Sprintf("guess-%02d-0123456789", i))...)
			api.Do("GET", "/api/v3/agent/router", nil, bearer(fmt.Sprintf("agent-guess-%02d-0123456789", i))...)
		}
		api.Do("GET", "/api/v3/services", nil, bearer("guess-99-0123456789")...).Want(429)
		fresh := createAgent(t, api, map[string]any{"name": "fresh"})
		api.Do("GET", "/api/v3/agent/router", nil, bearer(fresh.Token)...).Want(200)
		api.Do("GET", "/api/v3/services", nil, bearer(testTokens[auth.SRE])...).Want(200)
		for range 10 {
			api.Do("GET", "/api/v3/services", nil, bearer(old.Token)...).Want(401)
		}
		api.Do("GET", "/api/v3/agent/config/changes", nil, bearer(old.Token)...).Want(200)
	})
}

// A login is admitted before its check (a password can be guessed): 22
// wrong passwords for alice from one address spend that address's
// budget and alice's there; alice from another address logs in.
func TestLoginGuessesLockOnlyTheirAddress(t *testing.T) {
	l := newAuthLimiter(Limits{AuthFailuresPerMinute: 0.01, AuthFailureBurst: 20})
	now := time.Now()
	login := func(address, password string) authAttempt {
		return authAttempt{address: address, account: sha256.Sum256([]byte("alice")), secret: sha256.Sum256([]byte("alice\x00" + password))}
	}
	for i := range 22 {
		a := login("203.0.113.9", fmt.Sprint("wrong", i))
		if l.admit(&a, now) == 0 {
			l.settle(&a, false, now)
		}
	}
	if a := login("203.0.113.9", "wrong-again"); l.admit(&a, now) == 0 {
		t.Errorf("the guesser's address kept guessing alice's password")
	}
	if a := login("198.51.100.7", "right"); l.admit(&a, now) != 0 {
		t.Errorf("alice's login from her own address waits for the guesser's failures")
	}
	// Spread over many addresses, guesses spend alice's account budget,
	// ten times an address's.
	for i := range 200 {
		a := login(fmt.Sprintf("192.0.2.%d", i), fmt.Sprint("spread", i))
		if l.admit(&a, now) == 0 {
			l.settle(&a, false, now)
		}
	}
	if a := login("192.0.2.250", "spread-more"); l.admit(&a, now) == 0 {
		t.Errorf("guesses spread over 200 addresses never met alice's account budget")
	}
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

// A failure spends its address's budget, its account's there and, at ten
// times the size, its account's anywhere: a spent account waits at its
// address, a new account waits at a spent address, and a login that
// succeeded never waits.
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
		{"10.0.0.2", "stale", 0, 0},           // the account elsewhere
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
	// A token checked first spends as a login does, and spends nothing
	// once a budget is spent.
	tok := attempt("10.0.0.3", "token")
	if l.failed(tok, now) != 0 || l.failed(tok, now) != 0 || l.failed(tok, now) == 0 {
		t.Errorf("a token's failures: the burst of 2, then a wait")
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

// Behind a trusted proxy (an Ingress) the failed-authentication budgets
// are the forwarded client's: a guesser behind it spends its own, another
// client behind it is still answered. From anyone else X-Forwarded-For is
// ignored: a guesser cannot buy fresh budgets by writing it.
func TestTrustedProxiesForwardTheClientAddress(t *testing.T) {
	guess := func(api *testAPI, forwardedFor string, i int) int {
		return api.Do("GET", "/api/v3/agents", nil, "Authorization", fmt.Sprintf("Bearer guessed-token-%04d-xyz", i), "X-Forwarded-For", forwardedFor).Status
	}
	for _, tc := range []struct {
		name    string
		proxies []string
		other   int // what another forwarded client's first failure answers
	}{
		{"trusted", []string{"127.0.0.1/32", "::1"}, 401},
		{"not trusted", nil, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) {
				o.Limits = DefaultLimits
				o.Limits.AuthFailureBurst, o.Limits.AuthFailuresPerMinute = 3, 0.01
				o.TrustedProxies = tc.proxies
			})
			for i := range 3 {
				if got := guess(api, "203.0.113.9", i); got != 401 {
					t.Fatalf("guess %d answered %d, want 401", i, got)
				}
			}
			if got := guess(api, "203.0.113.9", 3); got != 429 {
				t.Fatalf("the guesser's fourth failure answered %d, want 429", got)
			}
			if got := guess(api, "198.51.100.7, 203.0.113.9", 4); got != 429 {
				t.Fatalf("a guesser writing a false first hop answered %d, want 429 (the proxy appends the real one)", got)
			}
			if got := guess(api, "198.51.100.7", 5); got != tc.other {
				t.Fatalf("another client's first failure answered %d, want %d", got, tc.other)
			}
		})
	}
}
