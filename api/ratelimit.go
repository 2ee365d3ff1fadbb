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

	"svcbridge/auth"
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

// Failed authentications are limited so that credentials cannot be
// guessed quickly: each client address (an IPv6 client by its /64, which
// one host commonly holds whole) and each credential (a token, a login's
// account) has a budget of failures. Once either is spent, a credential is
// refused with 429 before it is checked, unless it succeeded in the last
// trustFor: a successful client is never held back, and agents behind one
// NAT address keep polling while another client there guesses. Only a
// credential that never succeeded meets the limit; a guess that happens to
// hit an active token passes as that token's owner would, and such tokens
// are far too long to be found by trying.
type authLimiter struct {
	limit      rate.Limit
	burst      int
	mu         sync.Mutex // makes admit's check and count one step, so racing attempts cannot all pass
	addresses  *lru.Cache[string, *budget]
	credential *lru.Cache[[32]byte, *budget]
	trusted    *lru.Cache[[32]byte, time.Time] // until when a credential that succeeded skips the limit
}

// budget is one key's failures: those allowed over time, less the
// guesses admitted and not yet settled (each may be a failure). A guess is
// one secret: a client's concurrent first requests with one token are one
// guess, so a valid client is never held back before its token is known
// good, while racing guesses of distinct secrets cannot all pass.
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
	credential, _ := lru.New[[32]byte, *budget](limiterKeys)
	trusted, _ := lru.New[[32]byte, time.Time](limiterKeys)
	return &authLimiter{limit: rate.Limit(l.AuthFailuresPerMinute / 60), burst: l.AuthFailureBurst,
		addresses: addresses, credential: credential, trusted: trusted}
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
	return authAttempt{address: clientAddress(c.RemoteIP()), account: sha256.Sum256([]byte(account)), secret: sha256.Sum256([]byte(secret))}
}

// clientAddress is the key of a client's budget: its IP, or an IPv6
// client's /64. The TCP peer's address, not a forwarded header, which any
// client could set.
func clientAddress(ip string) string {
	parsed := net.ParseIP(ip)
	if parsed == nil || parsed.To4() != nil {
		return ip
	}
	return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (l *authLimiter) budgets(a authAttempt) []*budget {
	return []*budget{budgetOf(l, l.addresses, a.address), budgetOf(l, l.credential, a.account)}
}

// budgetOf is key's budget in c, made when it has none; l.mu is held.
func budgetOf[K comparable](l *authLimiter, c *lru.Cache[K, *budget], key K) *budget {
	if b, ok := c.Get(key); ok {
		return b
	}
	b := &budget{failures: rate.NewLimiter(l.limit, l.burst), pending: map[[32]byte]int{}}
	c.Add(key, b)
	return b
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

// admitAttempt reports whether a may be checked now; when not, it has
// answered 429 with Retry-After and logged the refusal, with the client's
// address and never the credential.
func (s *Server) admitAttempt(c *gin.Context, a *authAttempt) bool {
	wait := s.authLimit.admit(a, time.Now())
	if wait == 0 {
		return true
	}
	secs := int(math.Ceil(wait.Seconds()))
	s.requestLogger(c).WarnContext(c.Request.Context(), "authentication refused: too many failures",
		"client", a.address, "credential", hex.EncodeToString(a.account[:4]), "retry_after_s", secs)
	c.Header("Retry-After", strconv.Itoa(secs))
	fail(c, apiErr(http.StatusTooManyRequests, "TooManyRequestsError",
		"Too many failed authentications from this client or for this credential; retry after %d s", secs))
	return false
}

// limitBearer puts the bearer token of the routes after it under the
// limit: checked only while within budget, and a 401 is a failure.
func (s *Server) limitBearer(c *gin.Context) {
	token := auth.BearerToken(c.Request)
	if token == "" {
		c.Next() // nothing to guess: answered 401 at no cost
		return
	}
	a := newAttempt(c, token, token)
	if !s.admitAttempt(c, &a) {
		c.Abort()
		return
	}
	c.Next()
	_, user := c.Get(principalKey)
	_, agent := c.Get(agentKey)
	switch {
	case user || agent:
		s.authLimit.settle(&a, true, time.Now())
	case c.Writer.Status() == http.StatusUnauthorized:
		s.authLimit.settle(&a, false, time.Now())
	default: // not checked (the store failed, say): no failure
		s.authLimit.release(&a)
	}
}
