package web

import (
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
)

// TestRegradePreviewSplitsChanges: the preview lists what moves (raised,
// lowered, a failed submission that now has a score, items not yet done)
// and folds the unchanged rows away, counting each.
func TestRegradePreviewSplitsChanges(t *testing.T) {
	t.Parallel()
	d := regradeData{Regrade: &domain.Regrade{Items: []domain.RegradeItem{
		{Learner: "up", State: domain.RegradeItemDone, Change: 2},
		{Learner: "same1", State: domain.RegradeItemDone},
		{Learner: "down", State: domain.RegradeItemDone, Change: -1},
		{Learner: "was-failed", State: domain.RegradeItemDone, OldStatus: domain.StatusFailed},
		{Learner: "running", State: domain.RegradeItemPending},
		{Learner: "same2", State: domain.RegradeItemDone},
	}}}
	d.splitItems()
	names := func(items []domain.RegradeItem) (out []string) {
		for _, it := range items {
			out = append(out, it.Learner)
		}
		return out
	}
	if got := names(d.Changed); len(got) != 4 || got[0] != "up" || got[1] != "down" || got[2] != "was-failed" || got[3] != "running" {
		t.Errorf("changed %v", got)
	}
	if got := names(d.Unchanged); len(got) != 2 || d.Raised != 2 || d.Lowered != 1 {
		t.Errorf("unchanged %v, raised %d, lowered %d; want 2 unchanged, 2 raised, 1 lowered", got, d.Raised, d.Lowered)
	}
	if en, zh := plural(langEN, "n.changed", 4), plural(langZH, "n.unchanged", 2); en != "4 scores change" || zh != "2 份不变" {
		t.Errorf("summary words %q, %q", en, zh)
	}
}
