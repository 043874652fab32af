package store

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/pgnotify"
)

// Token checks kept in memory (issue 15). Looking a token up was a round
// trip per request, about a tenth of intake's CPU in the server and in
// Postgres together. On Postgres a server keeps the checks of valid
// tokens it has made while a dedicated connection LISTENs on
// authChannel, to which every change that could alter a check notifies
// at commit (triggers, migration 00021: tokens revoked, users changed,
// an address's failures counted or pruned). Any notification forgets
// them all, so a revocation counts on every server as soon as it is
// delivered, within milliseconds. Checks are served only while the
// listener is Fresh: it pings every authKeepAlive, and a ping proves
// every notification committed before it was delivered, so a connection
// that died without an error stops the serving within authFresh. While
// it is down every check is a lookup. SQLite keeps nothing: another
// process (`npugrade user`) may revoke a token and could not tell us.
// This process's own writes forget at once, not at their notification.

const (
	authChannel   = "npugrade_auth"
	authKeepAlive = time.Second
	authFresh     = 2 * time.Second
	// authCacheMax bounds the checks kept (one per valid token and
	// client address); a full cache starts over.
	authCacheMax = 10_000
)

type authKey struct {
	hash, addr string
	window     time.Duration
}

type authCache struct {
	mu      sync.Mutex
	fresh   func() bool // nil: no listener, nothing kept
	gen     uint64      // counts forgets: a lookup begun before one is not kept
	entries map[authKey]authScan
}

// get is k's kept check, while the listener is fresh.
func (c *authCache) get(k authKey) (authScan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fresh == nil || len(c.entries) == 0 || !c.fresh() {
		return authScan{}, false
	}
	s, ok := c.entries[k]
	return s, ok
}

// begin is the generation a lookup starts in, for put.
func (c *authCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put keeps s for k unless something was forgotten since gen: the lookup
// may have read what a change since has made stale.
func (c *authCache) put(gen uint64, k authKey, s authScan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fresh == nil || gen != c.gen {
		return
	}
	if c.entries == nil || len(c.entries) >= authCacheMax {
		c.entries = make(map[authKey]authScan)
	}
	c.entries[k] = s
}

// touch notes a token's recorded use in k's kept check, if still kept.
func (c *authCache) touch(k authKey, used sql.NullTime) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.entries[k]; ok {
		s.used = used
		c.entries[k] = s
	}
}

// forget drops every kept check and keeps none of the lookups in flight.
func (c *authCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// attach starts (fresh not nil) or stops keeping checks.
func (c *authCache) attach(fresh func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fresh = fresh
	c.gen++
	c.entries = nil
}

// ListenAuth keeps token checks in memory (see authChannel) while a
// dedicated connection listens for changes to them, until ctx ends. On
// SQLite it returns at once: every check reads the database.
func (db *DB) ListenAuth(ctx context.Context, log *slog.Logger) {
	dsn := db.ListenDSN()
	if dsn == "" {
		return
	}
	l := &pgnotify.Listener{DSN: dsn, Channel: authChannel, Log: log, KeepAlive: authKeepAlive,
		OnNotify: func(string) { db.auth.forget() },
		// Changes while disconnected were not notified.
		OnConnect:    db.auth.forget,
		OnDisconnect: func(error) { db.auth.forget() },
	}
	db.auth.attach(func() bool { return l.Fresh(authFresh) })
	defer db.auth.attach(nil)
	l.Run(ctx)
}
