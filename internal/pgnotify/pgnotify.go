// Package pgnotify keeps one dedicated Postgres connection LISTENing on a
// channel and hands every notification to a callback. Several server
// processes on one database learn of each other's writes this way within
// milliseconds, instead of re-querying tables on a timer.
//
// The connection is its own (pgconn, outside the query pool), because a
// LISTEN belongs to a session and a pooled connection is shared. When it
// drops, the listener reconnects with backoff; notifications sent in
// between are lost, so OnConnect runs after every (re)connection for the
// caller to re-check what it may have missed.
package pgnotify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ApplicationName names the listening session in pg_stat_activity.
const ApplicationName = "npugrade-listen"

// Listener listens on one channel until its context ends.
type Listener struct {
	// DSN is the Postgres connection string (URL or key=value).
	DSN string
	// Channel is the notification channel, an identifier.
	Channel string
	// OnNotify receives each notification's payload. It runs on the
	// listener's goroutine and must not block.
	OnNotify func(payload string)
	// OnConnect runs after each successful LISTEN (first and reconnects).
	OnConnect func()
	// OnDisconnect runs when a listening connection is lost.
	OnDisconnect func(err error)
	Log          *slog.Logger

	// KeepAlive is how often the listener pings the connection (a peer
	// that vanished without a reset is only noticed this way, and a
	// ping is what Fresh rests on); 0 means 30 s.
	KeepAlive time.Duration

	listening atomic.Bool
	// confirmed is when (since epoch) the last successful LISTEN or ping
	// was sent: every notification committed before it has been handed
	// to OnNotify.
	confirmed atomic.Int64
}

// epoch makes confirmed a monotonic reading (a wall clock set back must
// not make an old ping look recent).
var epoch = time.Now()

// Listening reports whether the LISTEN is in place now.
func (l *Listener) Listening() bool { return l.listening.Load() }

// Fresh reports whether the LISTEN is in place and the listener proved,
// less than within ago, that every notification committed until then has
// reached OnNotify: Postgres delivers a listening session's notifications
// in commit order and before it answers the session's next command, so a
// ping that succeeded proves it for what committed before it was sent.
// A caller that trusts a cache only while Fresh holds serves nothing that
// went stale more than within ago, even when the connection died
// silently and no error has shown it yet. Pings go every KeepAlive, so
// within should be more than that.
func (l *Listener) Fresh(within time.Duration) bool {
	return l.listening.Load() && time.Since(epoch)-time.Duration(l.confirmed.Load()) < within
}

// backoff bounds between reconnection attempts.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Run listens until ctx ends, reconnecting whenever the connection fails.
func (l *Listener) Run(ctx context.Context) {
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	wait := minBackoff
	for ctx.Err() == nil {
		start := time.Now()
		err := l.session(ctx)
		if l.listening.Swap(false) && l.OnDisconnect != nil {
			l.OnDisconnect(err)
		}
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			wait = minBackoff // it was up for a while: a fresh failure
		}
		log.Warn("postgres notifications: connection lost, reconnecting", "channel", l.Channel, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

// session is one connection: connect, LISTEN, then wait for notifications
// until an error.
func (l *Listener) session(ctx context.Context) error {
	cfg, err := pgconn.ParseConfig(l.DSN)
	if err != nil {
		return fmt.Errorf("parse DSN: %w", err)
	}
	if cfg.RuntimeParams["application_name"] == "" {
		// Operators see what the long-lived idle session is.
		cfg.RuntimeParams["application_name"] = ApplicationName
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if l.OnNotify != nil {
			l.OnNotify(n.Payload)
		}
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	sent := time.Since(epoch)
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(l.Channel)).ReadAll(); err != nil {
		return fmt.Errorf("listen %s: %w", l.Channel, err)
	}
	l.confirmed.Store(int64(sent))
	l.listening.Store(true)
	if l.OnConnect != nil {
		l.OnConnect()
	}
	keep := l.KeepAlive
	if keep <= 0 {
		keep = 30 * time.Second
	}
	for {
		// Ping every KeepAlive, notifications or not: a stream of them
		// must not starve the pings Fresh rests on.
		due := time.Duration(l.confirmed.Load()) + keep - time.Since(epoch)
		if due > 0 {
			waitCtx, cancel := context.WithTimeout(ctx, due)
			err := conn.WaitForNotification(waitCtx)
			cancel()
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
				return fmt.Errorf("wait for notifications: %w", err)
			}
		}
		// Make sure the server is still there and has sent everything.
		sent := time.Since(epoch)
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := conn.Ping(pingCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("ping: %w", err)
		}
		l.confirmed.Store(int64(sent))
	}
}

// quoteIdent quotes a channel name as an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
