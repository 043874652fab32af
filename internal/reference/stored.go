package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/store"
)

// Stored looks reference outputs up for grading: an exercise's committed
// file (answers/<id>/references/<profile>.json) when there is one, else
// the outputs a reference job recorded and an instructor accepted.
type Stored struct {
	DB StoredReferences
}

// StoredReferences reads the references reference jobs recorded.
type StoredReferences interface {
	Reference(ctx context.Context, exerciseID, profile string) (store.StoredReference, error)
}

// ReviewStore is what a review reads and writes of the database.
type ReviewStore interface {
	StoredReferences
	StagedReferences(ctx context.Context, f store.StagedReferenceFilter) ([]store.StagedReference, error)
	StagedReference(ctx context.Context, id int64) (store.StagedReference, error)
	DecideReference(ctx context.Context, id int64, accept bool, actor domain.User, note string) (store.StagedReference, error)
}

// Reference returns ex's reference outputs on profile. A stale committed
// file is an error, not a reason to fall back to the database.
func (s Stored) Reference(ctx context.Context, ex *exercise.Exercise, profile string) (*exercise.Reference, error) {
	ref, fileErr := ex.Reference(profile)
	if fileErr == nil {
		return ref, nil
	}
	if _, ok := ex.References[profile]; ok {
		return nil, fileErr // a stale file reference is an error, not a fallback
	}
	stored, err := s.DB.Reference(ctx, ex.ID, profile)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w (or POST /api/v1/exercises/%s/references with {\"profile\": %q})", fileErr, ex.ID, profile)
	}
	if err != nil {
		return nil, err
	}
	if stored.AnswerSHA256 != ex.AnswerSHA256() {
		return nil, fmt.Errorf("%w: exercise %s: the stored reference for profile %q was recorded from another version of the answer (record it again)", exercise.ErrStaleReference, ex.ID, profile)
	}
	out := &exercise.Reference{Exercise: ex.ID, Profile: profile, AnswerSHA256: stored.AnswerSHA256}
	if err := json.Unmarshal(stored.Cells, &out.Cells); err != nil {
		return nil, fmt.Errorf("decode stored reference %s/%s: %w", ex.ID, profile, err)
	}
	return out, nil
}
