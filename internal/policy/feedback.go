package policy

// FeedbackReleases release exercises' feedback to learners:
// under the exercise policy feedback "on_release" a learner sees the
// details of their feedback only once an instructor releases it, to
// everyone or to them (the Policy applies it). The API and the pages
// both call this service; every release is audit-logged with it.

import (
	"context"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
)

// FeedbackStore is what feedback releases read and write of the database.
type FeedbackStore interface {
	FeedbackReleases(ctx context.Context, exerciseID string) ([]domain.FeedbackRelease, error)
	ReleaseFeedback(ctx context.Context, exerciseID string, userID int64, learner string, actor domain.User) (domain.FeedbackRelease, error)
	UserByName(ctx context.Context, name string) (domain.User, error)
	// UserInScope: staff release to the learners of their cohorts only.
	UserInScope(ctx context.Context, userID int64) (bool, error)
}

// FeedbackReleases releases feedback over one database and catalog.
type FeedbackReleases struct {
	DB      FeedbackStore
	Catalog *exercise.Catalog
}

// Release releases exerciseID's feedback to learner ("" = everyone).
func (s FeedbackReleases) Release(ctx context.Context, actor domain.User, exerciseID, learner string) (domain.FeedbackRelease, error) {
	ex, err := s.Catalog.Get(exerciseID)
	if err != nil {
		return domain.FeedbackRelease{}, err
	}
	var userID int64
	if learner = strings.TrimSpace(learner); learner != "" {
		u, err := s.DB.UserByName(ctx, learner)
		if err == nil {
			ok, serr := s.DB.UserInScope(ctx, u.ID)
			if serr != nil {
				return domain.FeedbackRelease{}, serr
			}
			if !ok {
				err = domain.Errorf(domain.ENOTFOUND, "user %q not found", learner)
			}
		}
		if err != nil {
			return domain.FeedbackRelease{}, &domain.Error{Code: domain.EINVALID, Message: "the release is invalid",
				Problems: []string{"learner: " + domain.ErrorMessage(err)}}
		}
		userID = u.ID
	}
	return s.DB.ReleaseFeedback(ctx, ex.ID, userID, learner, actor)
}

// Releases lists exerciseID's releases, oldest first.
func (s FeedbackReleases) Releases(ctx context.Context, exerciseID string) ([]domain.FeedbackRelease, error) {
	if _, err := s.Catalog.Get(exerciseID); err != nil {
		return nil, err
	}
	return s.DB.FeedbackReleases(ctx, exerciseID)
}
