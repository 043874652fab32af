package queue

import "github.com/npugrade/npugrade/internal/domain"

// SetAfterReapRead installs the hook the reaper runs between its read of
// an expired lease and its write (tests only).
func SetAfterReapRead(q *Queue, f func(domain.Job)) { q.afterReapRead = f }

// Listening reports whether q's Postgres listener is in place (tests only).
func Listening(q *Queue) bool { return q.wake.listening.Load() }
