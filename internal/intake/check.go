package intake

import (
	"context"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/store"
)

// check stores an uncounted check: the same validation, rebuild and
// grading job as a submission, under the exercise's check limit instead of
// the learner's upload limit, rate_limit and max_submissions. A check
// that passes is a submission that passes: nothing about grading differs.
func (s *Service) check(ctx context.Context, r Request) (domain.Submission, bool, error) {
	r.IdempotencyKey = "" // a retried check is another check
	ex, exErr := s.Catalog.Get(r.ExerciseID)
	if exErr == nil {
		if ex.CheckPolicy().Off {
			return domain.Submission{}, false, domain.Errorf(domain.EFORBIDDEN,
				"练习 %s 不提供检查，请直接提交。(Exercise %s offers no checks: submit instead.)", ex.ID, ex.ID)
		}
		if err := s.gradable(ctx, ex); err != nil {
			return domain.Submission{}, false, err
		}
		if err := s.limitChecks(ctx, r.User, ex.ID, ex.CheckPolicy()); err != nil {
			return domain.Submission{}, false, err
		}
	}
	return s.submit(ctx, r, ex, exErr, false)
}

// limitChecks records a check against the exercise's check limit, or
// refuses it with when to retry. Staff are not limited.
func (s *Service) limitChecks(ctx context.Context, u domain.User, exerciseID string, p exercise.Checks) error {
	if u.Role.CanSeeAll() {
		return nil
	}
	count, per := p.Window()
	refused, err := s.DB.RecordCheck(ctx, u.ID, exerciseID, []store.UploadWindow{{Exercise: exerciseID, Count: count, Per: per}})
	if err != nil || refused == nil {
		return err
	}
	wait := refused.RetryAfter
	msg := fmt.Sprintf("检查过于频繁：练习 %s 每 %s 最多检查 %d 次，请 %s 后再试。(At most %d checks of exercise %s per %s; try again in %s.)",
		exerciseID, per, count, wait.Round(time.Second), count, exerciseID, per, wait.Round(time.Second))
	return &RateLimitError{Err: domain.Errorf(domain.ERATELIMIT, "%s", msg), RetryAfter: wait}
}
