package queue

import "github.com/npugrade/npugrade/internal/domain"

// SetAfterReapRead installs the hook the reaper runs between its read of
// an expired lease and its write (tests only).
func SetAfterReapRead(q *Queue, f func(domain.Job)) { q.afterReapRead = f }
