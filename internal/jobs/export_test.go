package jobs

import (
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// SetAfterReapRead installs the hook the reaper runs between its read of
// an expired lease and its write (tests only).
func SetAfterReapRead(q *Queue, f func(domain.Job)) { q.afterReapRead = f }

// Listening reports whether q's Postgres listener is in place (tests only).
func Listening(q *Queue) bool { return q.wake.listening.Load() }

// SetStoreBackoff sets the wait before a completion that could not be
// stored is retried, and returns what restores it.
func SetStoreBackoff(d time.Duration) (restore func()) {
	old := storeBackoff
	storeBackoff = d
	return func() { storeBackoff = old }
}
