package jobs

import (
	"container/list"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/pgnotify"
)

// Wake-ups of long-polling claimers. A claimer waits registered as a
// waiter with its matcher. On Postgres every job that becomes queued
// notifies channel notifyChannel (a trigger, migration 00010) and the
// listener of every server process wakes one waiter that can run it; a
// waiter that then leases a job wakes the next one, since more may be
// queued (a bulk insert notifies once). Without the listener (SQLite, or
// Postgres while the listener reconnects) Notify wakes every waiter of
// this process. The periodic re-query that remains is a safety net.

// notifyChannel is the channel migration 00010's trigger notifies.
const notifyChannel = "npugrade_jobs"

const (
	// safetyNet is how often a waiting claimer re-queries while wake-ups
	// arrive by notification; a long poll (runnerproto.MaxPoll) ends
	// before it, so an idle remote runner costs one claim per poll.
	safetyNet = 30 * time.Second
	// unnotifiedPoll is the re-query interval when no notification can
	// arrive (Postgres with the listener down).
	unnotifiedPoll = time.Second
)

type waiter struct {
	match domain.Matcher // nil: any job
	ch    chan struct{}  // capacity 1: a pending wake-up
}

func (w *waiter) accepts(r *domain.Requirement) bool {
	if r == nil || w.match == nil {
		return true
	}
	ok, _ := w.match(*r)
	return ok
}

// signal gives w a wake-up unless it has one pending; it reports whether
// it gave one.
func (w *waiter) signal() bool {
	select {
	case w.ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// wakeups is the queue's set of waiting claimers, oldest first.
type wakeups struct {
	waiters   list.List
	listening atomic.Bool // the Postgres listener is in place
}

func (q *Queue) addWaiter(match domain.Matcher) (*waiter, *list.Element) {
	w := &waiter{match: match, ch: make(chan struct{}, 1)}
	q.mu.Lock()
	defer q.mu.Unlock()
	return w, q.wake.waiters.PushBack(w)
}

// removeWaiter unregisters w. A wake-up w received but did not use is
// passed on, so that leaving (the runner hung up) loses no job.
func (q *Queue) removeWaiter(w *waiter, e *list.Element) {
	q.mu.Lock()
	q.wake.waiters.Remove(e)
	q.mu.Unlock()
	select {
	case <-w.ch:
		q.wakeSome(nil, 1)
	default:
	}
}

// wakeSome wakes up to n waiters (n < 0: all) that accept r (nil: any
// job), oldest first, skipping those with a wake-up pending.
func (q *Queue) wakeSome(r *domain.Requirement, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for e := q.wake.waiters.Front(); e != nil && n != 0; e = e.Next() {
		w := e.Value.(*waiter)
		if w.accepts(r) && w.signal() {
			n--
		}
	}
}

// Notify tells waiting claimers that jobs were queued by this process
// (the caller's transaction has committed). With the Postgres listener in
// place the trigger's notification wakes them, on every server; otherwise
// every waiter here re-queries.
func (q *Queue) Notify() {
	if q.wake.listening.Load() {
		return
	}
	q.wakeSome(nil, -1)
}

// notifyAt wakes the waiters when a job requeued with a backoff becomes
// claimable. With the listener in place the notification carries the
// time and the listener does this on every server.
func (q *Queue) notifyAt(at time.Time) {
	if q.wake.listening.Load() {
		return
	}
	time.AfterFunc(time.Until(at)+10*time.Millisecond, q.Notify)
}

// pollEvery is how often a waiting claimer re-queries by itself.
func (q *Queue) pollEvery() time.Duration {
	if q.db.Engine() == "postgres" && !q.wake.listening.Load() {
		return unnotifiedPoll
	}
	// SQLite has one writer, this process: Notify covers every enqueue.
	return safetyNet
}

// Listen keeps a dedicated Postgres connection listening for queued jobs
// until ctx ends (serve runs it; several servers on one database then
// wake each other's claimers). On SQLite it returns at once.
func (q *Queue) Listen(ctx context.Context) {
	dsn := q.db.ListenDSN()
	if dsn == "" {
		return
	}
	l := &pgnotify.Listener{DSN: dsn, Channel: notifyChannel, Log: q.log, OnNotify: q.onNotify,
		OnConnect: func() {
			q.wake.listening.Store(true)
			// Notifications sent while disconnected are lost: re-check.
			q.forgetRequirements()
			q.wakeSome(nil, -1)
			q.log.Info("listening for queued jobs", "channel", notifyChannel)
		},
		OnDisconnect: func(error) { q.wake.listening.Store(false); q.wakeSome(nil, -1) },
	}
	l.Run(ctx)
}

// onNotify handles one notification: "<not_before unix seconds> <requires>".
func (q *Queue) onNotify(payload string) {
	at, key, ok := strings.Cut(payload, " ")
	var req domain.Requirement
	if !ok || json.Unmarshal([]byte(key), &req) != nil {
		q.log.Warn("malformed job notification", "payload", truncate(payload, 200))
		q.wakeSome(nil, 1)
		return
	}
	q.addRequirement(req)
	if sec, err := strconv.ParseFloat(at, 64); err == nil {
		// A delay beyond any backoff is a clock the caller set (tests).
		if d := time.Until(time.UnixMicro(int64(sec * 1e6))); d > 0 && d < 10*time.Minute {
			// Retried with a backoff: wake a claimer when it ends.
			time.AfterFunc(d+10*time.Millisecond, func() { q.wakeSome(&req, 1) })
			return
		}
	}
	q.wakeSome(&req, 1)
}

// jitter spreads the safety-net re-queries of many waiters over time.
func jitter(d time.Duration) time.Duration { return d + rand.N(d/4+1) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
