package policy

import (
	"context"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
)

// Standing is where a learner stands in one exercise: what the notebook
// client's status() shows.
type Standing struct {
	Exercise *exercise.Exercise
	// Deadline is the learner's own: the extension's when one is in force.
	Deadline  *time.Time
	Extension bool
	// Attempts are the submissions max_submissions caps; Left is nil when
	// there is no cap.
	Attempts int
	Left     *int
	Counted  Counted
	// Latest is the newest submission (any status), nil for none.
	Latest *domain.Submission
}

// StandingsOf returns u's standing in every exercise of the catalog, in
// catalog order.
func (p *Service) StandingsOf(ctx context.Context, u domain.User) ([]Standing, error) {
	counted, err := p.Standings(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	latest, err := p.DB.LatestSubmissions(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	var out []Standing
	for _, ex := range p.Catalog.List() {
		st := Standing{Exercise: ex, Deadline: p.ForLearner(ctx, u, ex).Deadline, Counted: counted[ex.ID]}
		if st.Counted.Exercise == "" {
			st.Counted = Counted{Exercise: ex.ID, Policy: ex.Counts}
			if st.Counted.Policy == "" {
				st.Counted.Policy = exercise.CountsBest
			}
		}
		if l, ok := latest[ex.ID]; ok {
			st.Latest = &l
		}
		if p.Extensions != nil {
			ext, err := p.Extensions.ActiveExtension(ctx, ex.ID, u.ID)
			if err != nil {
				return nil, err
			}
			if ext != nil {
				d := ext.Deadline
				st.Deadline, st.Extension = &d, true
			}
		}
		if st.Attempts, err = p.Attempts(ctx, u, ex.ID); err != nil {
			return nil, err
		}
		if ex.MaxSubmissions > 0 && !u.Role.CanSeeAll() {
			left := max(0, ex.MaxSubmissions-st.Attempts)
			st.Left = &left
		}
		out = append(out, st)
	}
	return out, nil
}
