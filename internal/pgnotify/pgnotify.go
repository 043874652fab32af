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

	// KeepAlive is how long the connection may be silent before the
	// listener pings it (a peer that vanished without a reset is only
	// noticed this way); 0 means 30 s.
	KeepAlive time.Duration

	listening atomic.Bool
}

// Listening reports whether the LISTEN is in place now.
func (l *Listener) Listening() bool { return l.listening.Load() }

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
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(l.Channel)).ReadAll(); err != nil {
		return fmt.Errorf("listen %s: %w", l.Channel, err)
	}
	l.listening.Store(true)
	if l.OnConnect != nil {
		l.OnConnect()
	}
	keep := l.KeepAlive
	if keep <= 0 {
		keep = 30 * time.Second
	}
	for {
		waitCtx, cancel := context.WithTimeout(ctx, keep)
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
		// Silent for KeepAlive: make sure the server is still there.
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = conn.Ping(pingCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("ping: %w", err)
		}
	}
}

// quoteIdent quotes a channel name as an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
