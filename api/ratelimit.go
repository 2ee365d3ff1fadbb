package api

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Limits bound what one client may hold or try (README: configuration).
type Limits struct {
	// WatchMax and WatchMaxPerClient bound the open watches of the process
	// and of one user; WatchBuffer is how many reads of changes a watcher
	// may fall behind before its watch ends.
	WatchMax, WatchMaxPerClient, WatchBuffer int
	// AuthFailuresPerMinute and AuthFailureBurst are the budget of failed
	// authentications of one client address and of one credential.
	AuthFailuresPerMinute float64
	AuthFailureBurst      int
}

// DefaultLimits are the settings' defaults; New takes them for a zero
// Options.Limits.
var DefaultLimits = Limits{WatchMax: 256, WatchMaxPerClient: 16, WatchBuffer: 30, AuthFailuresPerMinute: 10, AuthFailureBurst: 20}

// Failed authentications are limited, and a valid credential is never
// refused for someone else's failures:
//
//   - A token (a user's bearer token, an agent's, a refresh token) is
//     checked first, always: none can be guessed (agents' are 32 random
//     bytes, static ones at least 16 characters, OIDC's signed), so a
//     valid one passes whatever others did from its address. A failure
//     spends from its client address's budget (an IPv6 client by its /64)
//     and the token's; while either is spent, failures answer 429 with
//     Retry-After rather than 401. A token valid for the other kind (an
//     agent's on a user route) is no guess and spends nothing.
//   - A password login is admitted before its check, since a password can
//     be guessed: its client address, the account at that address, and
//     the account anywhere (ten times the budget: a guesser spread over
//     many addresses) each have a budget; while one is spent the login is
//     refused with 429 before it is checked, unless its credential
//     succeeded in the last trustFor. A guesser at one address spends the
//     account's budget there, not another address's: the account's owner
//     elsewhere logs in.
type authLimiter struct {
	limit     rate.Limit
	burst     int
	mu        sync.Mutex // makes admit's check and count one step, so racing attempts cannot all pass
	addresses *lru.Cache[string, *budget]
	pairs     *lru.Cache[string, *budget]     // an account at an address
	accounts  *lru.Cache[[32]byte, *budget]   // an account anywhere: accountScale times the budget
	trusted   *lru.Cache[[32]byte, time.Time] // until when a login's credential that succeeded skips the limit
}

// accountScale is how many times an address's budget an account has
// across all addresses.
const accountScale = 10

// budget is one key's failures: those allowed over time, less the logins
// admitted and not yet settled (each may be a failure). A guess is one
// secret: a client's concurrent logins with one password are one guess,
// while racing guesses of distinct secrets cannot all pass.
type budget struct {
	failures *rate.Limiter
	pending  map[[32]byte]int // attempts in flight, by secret
}

// wait is how long until one more guess may be admitted; a secret already
// in flight is no new guess.
func (b *budget) wait(secret [32]byte, now time.Time) time.Duration {
	if b.pending[secret] > 0 {
		return 0
	}
	return refill(b.failures.TokensAt(now)-float64(len(b.pending)), b.failures.Limit())
}

// refill is how long a budget holding tokens (fewer than one when spent)
// takes to allow one more failure at limit failures a second.
func refill(tokens float64, limit rate.Limit) time.Duration {
	if tokens >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - tokens) / float64(limit) * float64(time.Second)))
}

const (
	// trustFor is how long a credential that succeeded skips the limit.
	trustFor = time.Hour
	// limiterKeys bounds the budgets and trusted credentials kept: the
	// least recently used go first, so memory stays bounded whoever calls.
	limiterKeys = 1 << 16
)

func newAuthLimiter(l Limits) *authLimiter {
	addresses, _ := lru.New[string, *budget](limiterKeys) // fails only for a size ≤ 0
	pairs, _ := lru.New[string, *budget](limiterKeys)
	accounts, _ := lru.New[[32]byte, *budget](limiterKeys)
	trusted, _ := lru.New[[32]byte, time.Time](limiterKeys)
	return &authLimiter{limit: rate.Limit(l.AuthFailuresPerMinute / 60), burst: l.AuthFailureBurst,
		addresses: addresses, pairs: pairs, accounts: accounts, trusted: trusted}
}

// authAttempt is one credential presented by one client: account is what
// a guesser would aim at (the token itself, a login's email), secret what
// proves it (the token, the email and password).
type authAttempt struct {
	address         string
	account, secret [32]byte
	admitted        bool // counted as pending in its budgets
}

func newAttempt(c *gin.Context, account, secret string) authAttempt {
	return authAttempt{address: clientAddress(c.ClientIP()), account: sha256.Sum256([]byte(account)), secret: sha256.Sum256([]byte(secret))}
}

// clientAddress is the key of a client's budget: its IP, or an IPv6
// client's /64: the TCP peer's address, or the one a trusted proxy
// forwards (Options.TrustedProxies), never a forwarded header from
// anyone else, which any client could set.
func clientAddress(ip string) string {
	parsed := net.ParseIP(ip)
	if parsed == nil || parsed.To4() != nil {
		return ip
	}
	return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (l *authLimiter) budgets(a authAttempt) []*budget {
	return []*budget{
		budgetOf(l.addresses, a.address, l.limit, l.burst),
		budgetOf(l.pairs, hex.EncodeToString(a.account[:])+"@"+a.address, l.limit, l.burst),
		budgetOf(l.accounts, a.account, l.limit*accountScale, l.burst*accountScale),
	}
}

// budgetOf is key's budget in c, made when it has none; l.mu is held.
func budgetOf[K comparable](c *lru.Cache[K, *budget], key K, limit rate.Limit, burst int) *budget {
	if b, ok := c.Get(key); ok {
		return b
	}
	b := &budget{failures: rate.NewLimiter(limit, burst), pending: map[[32]byte]int{}}
	c.Add(key, b)
	return b
}

// failed records the failure of a token checked first: it spends from
// a's budgets and returns 0, or, when one is spent, spends nothing and
// returns how long until it is not (the failure answers 429 then).
func (l *authLimiter) failed(a authAttempt, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var wait time.Duration
	bs := l.budgets(a)
	for _, b := range bs {
		wait = max(wait, b.wait(a.secret, now))
	}
	if wait == 0 {
		for _, b := range bs {
			b.failures.AllowN(now, 1)
		}
	}
	return wait
}

// admit returns how long a must wait before its credential is checked: 0
// when it may be at once, and then a is pending in its budgets until
// settled. A trusted credential is admitted at once and counts nowhere.
func (l *authLimiter) admit(a *authAttempt, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until, ok := l.trusted.Get(a.secret); ok && now.Before(until) {
		return 0
	}
	var wait time.Duration
	bs := l.budgets(*a)
	for _, b := range bs {
		wait = max(wait, b.wait(a.secret, now))
	}
	if wait == 0 {
		for _, b := range bs {
			b.pending[a.secret]++
		}
		a.admitted = true
	}
	return wait
}

// settle records how a's check ended: a failure spends from its budgets
// and ends any trust; a success trusts the secret.
func (l *authLimiter) settle(a *authAttempt, ok bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done(a, func(b *budget) {
		if !ok {
			b.failures.AllowN(now, 1)
		}
	})
	if ok {
		l.trusted.Add(a.secret, now.Add(trustFor))
	} else {
		l.trusted.Remove(a.secret)
	}
}

// release ends a without a verdict (its check did not run): no failure.
func (l *authLimiter) release(a *authAttempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done(a, func(*budget) {})
}

// done takes a out of its budgets' pending, doing spend to each; l.mu is
// held.
func (l *authLimiter) done(a *authAttempt, spend func(*budget)) {
	if !a.admitted {
		return
	}
	a.admitted = false
	for _, b := range l.budgets(*a) {
		if b.pending[a.secret]--; b.pending[a.secret] <= 0 {
			delete(b.pending, a.secret)
		}
		spend(b)
	}
}

// admitAttempt reports whether a login may be checked now; when not, it
// has answered 429 with Retry-After and logged the refusal, with the
// client's address and never the credential.
func (s *Server) admitAttempt(c *gin.Context, a *authAttempt) bool {
	wait := s.authLimit.admit(a, time.Now())
	if wait == 0 {
		return true
	}
	s.tooManyFailures(c, *a, wait)
	return false
}

// tooManyFailures answers 429 with Retry-After wait, and logs it.
func (s *Server) tooManyFailures(c *gin.Context, a authAttempt, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	s.requestLogger(c).WarnContext(c.Request.Context(), "authentication refused: too many failures",
		"client", a.address, "credential", hex.EncodeToString(a.account[:4]), "retry_after_s", secs)
	c.Header("Retry-After", strconv.Itoa(secs))
	fail(c, apiErr(http.StatusTooManyRequests, "TooManyRequestsError",
		"Too many failed authentications from this client or for this credential; retry after %d s", secs))
}

// tokenFailed records that the request's token (checked first) failed,
// and answers 429 when its client or the token has spent its budget;
// otherwise the caller answers 401. A token another authenticator knows
// (an agent's on a user route, a user's on an agent route: other says)
// is no guess, and spends nothing.
func (s *Server) tokenFailed(c *gin.Context, token string, other bool) (answered bool) {
	if other {
		return false
	}
	a := newAttempt(c, token, token)
	if wait := s.authLimit.failed(a, time.Now()); wait > 0 {
		s.tooManyFailures(c, a, wait)
		return true
	}
	return false
}
