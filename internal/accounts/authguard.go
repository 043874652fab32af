// Package accounts is who may do what: the bearer tokens the API and the
// pages check (Guard) and the class rosters people come from (Rosters).
//
// Guard checks bearer tokens for the API and the pages, and
// throttles the client addresses that keep presenting bad ones: a
// guesser gets a few tries a minute, then 429, on every server sharing
// the database, and every failure is logged (address and path, never
// the token), repeated ones summarised. Only failed authentication is
// counted and only it is refused: a valid token is admitted from any
// address, so a class behind one NAT or proxy is not locked out by one
// learner's typos or a stale script.
package accounts

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
	maxTracked      = 100_000 // addresses whose log lines are summarised at once
)

// Throttled is the error for an address over its limit.
type Throttled struct {
	Err        *domain.Error
	RetryAfter time.Duration
}

func (e *Throttled) Error() string { return e.Err.Error() }

// Unwrap lets errors.As find the *domain.Error (429).
func (e *Throttled) Unwrap() error { return e.Err }

// GuardStore is what the guard reads and writes of the database.
type GuardStore interface {
	Authenticate(ctx context.Context, token, addr string, window time.Duration) (store.TokenCheck, error)
	Now() time.Time
	PruneAuthFailures(ctx context.Context, window time.Duration) error
	RecordAuthFailure(ctx context.Context, addr string, window time.Duration) (int, time.Time, error)
}

// Guard resolves tokens. The failure counts live in the database
// (store.RecordAuthFailure), so several servers on one Postgres throttle
// an address together; an address over the limit is refused before any
// write, so a guesser causes at most Failures writes per window. Only
// the log summaries are per process.
type Guard struct {
	DB       GuardStore
	Log      *slog.Logger
	Failures int
	Window   time.Duration

	mu     sync.Mutex
	logs   map[string]*logState
	pruned time.Time
}

type logState struct {
	logged time.Time // last log line for this address
	quiet  int       // failures not logged since
}

// User returns the user of token, presented from addr for path. Bad
// tokens count against addr; an address over the limit is refused
// unless its token is valid. The limit and the token are read in one statement
// (store.Authenticate): one round trip per request, none on Postgres
// while the server keeps the check (forgotten at any change to it, on
// every server).
func (g *Guard) User(ctx context.Context, addr, path, token string) (domain.User, error) {
	_, w := g.Limits()
	a, err := g.DB.Authenticate(ctx, token, addr, w)
	if err != nil {
		return domain.User{}, err
	}
	return g.Admit(ctx, addr, path, token, a)
}

// Admit decides on an authentication read elsewhere (a runner's claim
// authenticates in the claim's statement, store.ClaimAuth): a good token
// gives its user whatever its address's failures; a bad one from an
// address over the limit is refused (*Throttled) and not counted (no
// write), below the limit it is counted and refused (EUNAUTHORIZED).
func (g *Guard) Admit(ctx context.Context, addr, path, token string, a store.TokenCheck) (domain.User, error) {
	if a.Valid {
		return a.User, nil
	}
	n, w := g.Limits()
	if a.Failures >= n {
		wait := max(a.WindowStart.Add(w).Sub(g.DB.Now()), time.Second)
		return domain.User{}, &Throttled{RetryAfter: wait,
			Err: domain.Errorf(domain.ERATELIMIT, "too many failed sign-ins from this address; try again in %s", wait.Round(time.Second))}
	}
	g.failed(ctx, addr, path)
	if token == "" {
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "a bearer token is required")
	}
	return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "the token is not valid")
}

// Limits are the failed sign-ins allowed per address and window.
func (g *Guard) Limits() (int, time.Duration) {
	n, w := g.Failures, g.Window
	if n <= 0 {
		n = DefaultFailures
	}
	if w <= 0 {
		w = DefaultWindow
	}
	return n, w
}

func (g *Guard) failed(ctx context.Context, addr, path string) {
	n, w := g.Limits()
	fails, _, err := g.DB.RecordAuthFailure(ctx, addr, w)
	if err != nil && g.Log != nil {
		g.Log.Warn("counting a failed authentication", "addr", addr, "err", err)
	}
	now := time.Now()
	g.mu.Lock()
	if g.logs == nil {
		g.logs = map[string]*logState{}
	}
	if len(g.logs) >= maxTracked {
		for a, s := range g.logs {
			if now.Sub(s.logged) >= w {
				delete(g.logs, a)
			}
		}
	}
	prune := now.Sub(g.pruned) >= w
	if prune {
		g.pruned = now
	}
	s := g.logs[addr]
	if s == nil {
		s = &logState{}
		g.logs[addr] = s
	}
	// One line per address and window: the first failure, then a summary.
	logNow := now.Sub(s.logged) >= w
	quiet := s.quiet
	if logNow {
		s.logged, s.quiet = now, 0
	} else {
		s.quiet++
	}
	g.mu.Unlock()
	if prune {
		if err := g.DB.PruneAuthFailures(ctx, w); err != nil && g.Log != nil {
			g.Log.Warn("pruning failed authentications", "err", err)
		}
	}
	if logNow && g.Log != nil {
		g.Log.Warn("authentication failed", "addr", addr, "path", path, "failures_in_window", fails,
			"not_logged_since_last", quiet, "throttled", fails >= n)
	}
}

// Check refuses addr (*Throttled) when it is over its failure limit,
// for sign-ins that present no npugrade token (a JupyterHub token
// exchange).
func (g *Guard) Check(ctx context.Context, addr string) error {
	n, w := g.Limits()
	a, err := g.DB.Authenticate(ctx, "", addr, w) // no token: reads the address's failures only
	if err != nil {
		return err
	}
	if a.Failures >= n {
		wait := max(a.WindowStart.Add(w).Sub(g.DB.Now()), time.Second)
		return &Throttled{RetryAfter: wait,
			Err: domain.Errorf(domain.ERATELIMIT, "too many failed sign-ins from this address; try again in %s", wait.Round(time.Second))}
	}
	return nil
}

// Failed counts a failed sign-in from addr at path.
func (g *Guard) Failed(ctx context.Context, addr, path string) { g.failed(ctx, addr, path) }
