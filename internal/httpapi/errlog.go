package httpapi

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// errorLogEvery is how often one identical error is logged: a database
// that is down fails every request the same way, and one line per
// request would bury everything else.
const errorLogEvery = 10 * time.Second

// repeatLog logs an error the first time and then once per interval with
// how often it happened meanwhile.
type repeatLog struct {
	out  *slog.Logger
	mu   sync.Mutex
	seen map[string]*repeat
}

type repeat struct {
	last  time.Time
	count int
}

func (s *Server) errorLog() *repeatLog {
	s.errLogOnce.Do(func() { s.errLog = &repeatLog{out: s.Log, seen: map[string]*repeat{}} })
	return s.errLog
}

// log logs err unless one with the same key was logged within the
// interval; key "" means the error's text.
func (r *repeatLog) log(ctx context.Context, key, msg string, err error, attrs ...any) {
	if key == "" {
		key = err.Error()
	}
	key = msg + "\x00" + key
	now := time.Now()
	r.mu.Lock()
	if len(r.seen) > 1000 {
		clear(r.seen) // bounded: distinct errors are few; a flood of them is logged afresh
	}
	rp := r.seen[key]
	if rp != nil && now.Sub(rp.last) < errorLogEvery {
		rp.count++
		r.mu.Unlock()
		return
	}
	repeated := 0
	if rp != nil {
		repeated = rp.count
	}
	r.seen[key] = &repeat{last: now}
	r.mu.Unlock()
	r.out.ErrorContext(ctx, msg, append(attrs, "err", err, "repeated_since_last_line", repeated)...)
}
