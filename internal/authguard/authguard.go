// Package authguard checks bearer tokens for the API and the pages, and
// throttles the client addresses that keep presenting bad ones: a
// guesser gets a few tries a minute, then 429, and every failure is
// logged (address and path, never the token), repeated ones summarised.
package authguard

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
)

// Defaults: failures allowed per address and window before it is refused.
const (
	DefaultFailures = 20
	DefaultWindow   = time.Minute
	maxTracked      = 100_000 // addresses remembered at once
)

// Throttled is the error for an address over its limit.
type Throttled struct {
	Err        *domain.Error
	RetryAfter time.Duration
}

func (e *Throttled) Error() string { return e.Err.Error() }

// Unwrap lets errors.As find the *domain.Error (429).
func (e *Throttled) Unwrap() error { return e.Err }

// Guard resolves tokens. Its counts live in this process: each server
// throttles the connections it serves, and a failed guess costs no
// database write (which an attacker could otherwise multiply).
type Guard struct {
	DB       *store.DB
	Log      *slog.Logger
	Failures int
	Window   time.Duration

	mu    sync.Mutex
	addrs map[string]*window
}

type window struct {
	start  time.Time
	fails  int
	logged time.Time // last log line for this address
	quiet  int       // failures not logged since
}

// User returns the user of token, presented from addr for path. Bad
// tokens count against addr; an address over the limit is refused
// without its token being looked at.
func (g *Guard) User(ctx context.Context, addr, path, token string) (domain.User, error) {
	if wait := g.blocked(addr); wait > 0 {
		return domain.User{}, &Throttled{RetryAfter: wait,
			Err: domain.Errorf(domain.ERATELIMIT, "too many failed sign-ins from this address; try again in %s", wait.Round(time.Second))}
	}
	u, err := g.DB.UserByToken(ctx, token)
	if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
		g.failed(addr, path)
	}
	return u, err
}

func (g *Guard) limits() (int, time.Duration) {
	n, w := g.Failures, g.Window
	if n <= 0 {
		n = DefaultFailures
	}
	if w <= 0 {
		w = DefaultWindow
	}
	return n, w
}

func (g *Guard) blocked(addr string) time.Duration {
	n, w := g.limits()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.addrs[addr]
	now := time.Now()
	if s == nil || now.Sub(s.start) >= w || s.fails < n {
		return 0
	}
	return s.start.Add(w).Sub(now)
}

func (g *Guard) failed(addr, path string) {
	n, w := g.limits()
	now := time.Now()
	g.mu.Lock()
	if g.addrs == nil {
		g.addrs = map[string]*window{}
	}
	if len(g.addrs) >= maxTracked {
		for a, s := range g.addrs {
			if now.Sub(s.start) >= w {
				delete(g.addrs, a)
			}
		}
	}
	s := g.addrs[addr]
	if s == nil || now.Sub(s.start) >= w {
		if s == nil {
			s = &window{}
			g.addrs[addr] = s
		}
		s.start, s.fails = now, 0
	}
	s.fails++
	fails := s.fails
	// One line per address and window: the first failure, then a summary.
	logNow := now.Sub(s.logged) >= w
	quiet := s.quiet
	if logNow {
		s.logged, s.quiet = now, 0
	} else {
		s.quiet++
	}
	g.mu.Unlock()
	if logNow && g.Log != nil {
		g.Log.Warn("authentication failed", "addr", addr, "path", path, "failures_in_window", fails,
			"not_logged_since_last", quiet, "throttled", fails >= n)
	}
}
