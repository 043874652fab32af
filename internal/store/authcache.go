package store

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/pgnotify"
)

// Token checks kept in memory. Looking a token up was a round
// trip per request, about a tenth of intake's CPU in the server and in
// Postgres together. On Postgres a server keeps the checks of valid
// tokens it has made while a dedicated connection LISTENs on
// authChannel, to which every change that could alter a check notifies
// at commit (triggers, migration 00021: tokens revoked, users changed,
// an address's failures pruned, and 00022: an address's failures
// counted, which forgets that address's checks alone). Any other
// notification forgets them all, so a revocation counts on every server as soon as it is
// delivered, within milliseconds. Checks are served only while the
// listener is Fresh: it pings every authKeepAlive, and a ping proves
// every notification committed before it was delivered, so a connection
// that died without an error stops the serving within authFresh. While
// it is down every check is a lookup. SQLite keeps nothing: another
// process (`npugrade user`) may revoke a token and could not tell us.
// This process's own writes forget at once, not at their notification.

const (
	authChannel = "npugrade_auth"
	// authAddrPrefix starts the notification of one address's failures.
	authAddrPrefix = "addr "
	authKeepAlive  = time.Second
	authFresh      = 2 * time.Second
	// authCacheMax bounds the checks kept (one per valid token and
	// client address); a full cache starts over.
	authCacheMax = 10_000
)

type authKey struct {
	hash, addr string
	window     time.Duration
}

type authCache struct {
	mu    sync.Mutex
	fresh func() bool // nil: no listener, nothing kept
	gen   uint64      // counts forgets: a lookup begun before one is not kept
	// entries by client address: an address's failures, counted on any
	// server, forget its checks alone (forgetAddr).
	entries map[string]map[authKey]authScan
	n       int // checks in entries
}

// get is k's kept check, while the listener is fresh.
func (c *authCache) get(k authKey) (authScan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fresh == nil || c.n == 0 || !c.fresh() {
		return authScan{}, false
	}
	s, ok := c.entries[k.addr][k]
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
	if c.entries == nil || c.n >= authCacheMax {
		c.entries, c.n = make(map[string]map[authKey]authScan), 0
	}
	byKey := c.entries[k.addr]
	if byKey == nil {
		byKey = make(map[authKey]authScan)
		c.entries[k.addr] = byKey
	}
	if _, ok := byKey[k]; !ok {
		c.n++
	}
	byKey[k] = s
}

// touch notes a token's recorded use in k's kept check, if still kept.
func (c *authCache) touch(k authKey, used sql.NullTime) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.entries[k.addr][k]; ok {
		s.used = used
		c.entries[k.addr][k] = s
	}
}

// forget drops every kept check and keeps none of the lookups in flight.
func (c *authCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	c.n = 0
}

// forgetAddr drops the kept checks of one client address, whose failures
// changed, and keeps none of the lookups in flight (they may have read
// the count before). Other addresses' checks stay: a guesser's failures
// do not make every server look every token up again.
func (c *authCache) forgetAddr(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.n -= len(c.entries[addr])
	delete(c.entries, addr)
}

// notified forgets what a notification on authChannel says changed: one
// address's failures (authAddrPrefix and the address, migration 00022),
// or anything else (the table's name): every check.
func (c *authCache) notified(payload string) {
	if addr, ok := strings.CutPrefix(payload, authAddrPrefix); ok {
		c.forgetAddr(addr)
		return
	}
	c.forget()
}

// attach starts (fresh not nil) or stops keeping checks.
func (c *authCache) attach(fresh func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fresh = fresh
	c.gen++
	c.entries, c.n = nil, 0
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
		OnNotify: db.auth.notified,
		// Changes while disconnected were not notified.
		OnConnect:    db.auth.forget,
		OnDisconnect: func(error) { db.auth.forget() },
	}
	db.auth.attach(func() bool { return l.Fresh(authFresh) })
	defer db.auth.attach(nil)
	l.Run(ctx)
}
