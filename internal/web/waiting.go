package web

import (
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/fleet"
)

// waitingFor says, in the page's language, what a queued submission waits
// for when no runner seen in the last minute can grade it ("" otherwise).
func (h *handler) waitingFor(c *gin.Context, sub domain.Submission) string {
	if sub.Status != domain.StatusQueued || h.Fleet == nil || h.Catalog == nil {
		return ""
	}
	ex, err := h.Catalog.Get(sub.ExerciseID)
	if err != nil {
		return ""
	}
	runners, err := h.Fleet.Runners(c.Request.Context(), time.Now().Add(-time.Minute))
	if err != nil {
		return ""
	}
	return fleet.WaitingFor(ex.Requires, runners, c.GetString(ctxLang) == langZH)
}

// unservedRow is an exercise no runner online can grade, and what its
// submissions wait for.
type unservedRow struct {
	Exercise, WaitingFor string
}

// unserved lists the exercises that no runner seen in the last minute
// can grade: the dashboard says so before learners ask.
func unserved(exs []*exercise.Exercise, runners []fleet.Runner, chinese bool) []unservedRow {
	var live []fleet.Runner
	for _, r := range runners {
		if time.Since(r.LastSeen) < time.Minute {
			live = append(live, r)
		}
	}
	var out []unservedRow
	for _, ex := range exs {
		if w := fleet.WaitingFor(ex.Requires, live, chinese); w != "" {
			out = append(out, unservedRow{Exercise: ex.ID, WaitingFor: w})
		}
	}
	return out
}
