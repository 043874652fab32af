package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/runnerproto"
)

// fleetRoutes mounts the instructor view of the runner fleet: registered
// runners, the jobs waiting for them, and reference runs through the queue.
func (s *Server) fleetRoutes(api *gin.RouterGroup) {
	staff := s.requireRole(domain.RoleInstructor, domain.RoleAdmin)
	api.GET("/runners", staff, s.listRunners)
	api.GET("/queue/jobs", staff, s.pendingJobs)
	api.POST("/queue/jobs/:id/cancel", staff, s.cancelJob)
	api.GET("/exercises/:id/references", staff, s.listReferences)
	api.POST("/exercises/:id/references", staff, s.recordReference)
}

// RunnerJSON is one item of GET /api/v1/runners.
type RunnerJSON struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Slots    int               `json:"slots"`
	Profile  string            `json:"profile"`
	Verdict  string            `json:"verdict"`
	Labels   map[string]string `json:"labels"`
	LastSeen time.Time         `json:"last_seen"`
	Draining bool              `json:"draining"`
	// Online is true when the runner polled within the last two long polls.
	Online   bool            `json:"online"`
	Warnings []string        `json:"warnings"`
	Report   envprobe.Report `json:"report"`
	// Allowed is what the runner's token may register as (absent: not
	// bound); Profile, Labels and Report are what the runner attested.
	Allowed *fleet.RunnerScope `json:"allowed,omitempty"`
	// WarmSpares is the runner's pre-started kernels and the memory they
	// held when it last reported (absent: it keeps none).
	WarmSpares *runnerproto.WarmSpares `json:"warm_spares,omitempty"`
}

func (s *Server) listRunners(c *gin.Context) {
	rs, err := s.DB.Runners(c.Request.Context(), time.Time{})
	if err != nil {
		s.problem(c, err)
		return
	}
	now := s.DB.Now()
	out := make([]RunnerJSON, len(rs))
	for i, r := range rs {
		w := r.Report.Warnings
		if w == nil {
			w = []string{}
		}
		out[i] = RunnerJSON{ID: r.ID, Name: r.Name, Slots: r.Slots, Profile: r.Profile, Verdict: r.Verdict, Labels: r.Labels,
			LastSeen: r.LastSeen, Draining: r.Draining, Online: now.Sub(r.LastSeen) < time.Minute, Warnings: w, Report: r.Report,
			Allowed: r.Allowed}
		if ws := r.WarmSpares; ws.Kept > 0 {
			out[i].WarmSpares = &runnerproto.WarmSpares{PerSlot: ws.PerSlot, Kept: ws.Kept, Ready: ws.Ready, MemoryBytes: ws.MemoryBytes}
		}
	}
	c.JSON(http.StatusOK, out)
}

// PendingJSON is one item of GET /api/v1/queue/jobs.
type PendingJSON struct {
	ID             int64              `json:"id"`
	Kind           string             `json:"kind"`
	Exercise       string             `json:"exercise"`
	SubmissionID   string             `json:"submission_id,omitempty"`
	Profile        string             `json:"profile,omitempty"`
	State          string             `json:"state"`
	Requires       domain.Requirement `json:"requires"`
	Attempt        int                `json:"attempt"`
	MaxAttempts    int                `json:"max_attempts"`
	RunnerID       string             `json:"runner_id,omitempty"`
	LeaseExpiresAt *time.Time         `json:"lease_expires_at,omitempty"`
	LastError      string             `json:"last_error,omitempty"`
	CreatedAt      time.Time          `json:"created_at"`
	// Eligible counts the live, non-draining runners whose report
	// satisfies the job; WaitingFor says what it waits for when none does.
	Eligible   int    `json:"eligible_runners"`
	WaitingFor string `json:"waiting_for,omitempty"`
}

// cancelJob cancels a queued or running job for an instructor.
func (s *Server) cancelJob(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(c, domain.Errorf(domain.EINVALID, "job id %q is not a number", c.Param("id")))
		return
	}
	u := currentUser(c)
	j, err := s.Queue.Cancel(c.Request.Context(), id, "canceled by "+u.Name)
	if err != nil {
		s.problem(c, err)
		return
	}
	s.Log.Info("job canceled", "job", j.ID, "submission", j.SubmissionID, "by", u.Name)
	c.JSON(http.StatusOK, PendingJSON{ID: j.ID, Kind: j.Kind, Exercise: j.ExerciseID, SubmissionID: j.SubmissionID, Profile: j.Profile,
		State: j.State, Requires: j.Requires, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, RunnerID: j.RunnerID,
		LastError: j.LastError, CreatedAt: j.CreatedAt})
}

func (s *Server) pendingJobs(c *gin.Context) {
	limit, _ := strconv.Atoi(c.Query("limit"))
	jobs, err := s.Queue.Pending(c.Request.Context(), limit)
	if err != nil {
		s.problem(c, err)
		return
	}
	runners, err := s.DB.Runners(c.Request.Context(), s.DB.Now().Add(-time.Minute))
	if err != nil {
		s.problem(c, err)
		return
	}
	out := make([]PendingJSON, len(jobs))
	for i, j := range jobs {
		p := PendingJSON{ID: j.ID, Kind: j.Kind, Exercise: j.ExerciseID, SubmissionID: j.SubmissionID, Profile: j.Profile,
			State: j.State, Requires: j.Requires, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, RunnerID: j.RunnerID,
			LeaseExpiresAt: j.LeaseExpiresAt, LastError: j.LastError, CreatedAt: j.CreatedAt}
		why := ""
		for _, r := range runners {
			if r.Draining {
				continue
			}
			if ok, reason := r.Report.Satisfies(j.Requires); ok {
				p.Eligible++
			} else if why == "" {
				why = reason
			}
		}
		if p.State == domain.JobQueued && p.Eligible == 0 {
			p.WaitingFor = "no runner online satisfies the job"
			if why != "" {
				p.WaitingFor += " (" + why + ")"
			}
		}
		out[i] = p
	}
	c.JSON(http.StatusOK, out)
}

// ReferenceJSON is one item of GET /api/v1/exercises/{id}/references.
type ReferenceJSON struct {
	Profile string `json:"profile"`
	// Source is "file" (answers/<id>/references/<profile>.json, which
	// wins) or "database" (recorded by a reference run).
	Source       string     `json:"source"`
	AnswerSHA256 string     `json:"answer_sha256"`
	Current      bool       `json:"current"` // recorded from the answer as it is now
	Cells        int        `json:"cells"`
	RunnerID     string     `json:"runner_id,omitempty"`
	JobID        int64      `json:"job_id,omitempty"`
	RecordedAt   *time.Time `json:"recorded_at,omitempty"`
}

func (s *Server) listReferences(c *gin.Context) {
	ex, err := s.Catalog.Get(c.Param("id"))
	if err != nil {
		s.problem(c, err)
		return
	}
	out := []ReferenceJSON{}
	for profile, ref := range ex.References {
		out = append(out, ReferenceJSON{Profile: profile, Source: "file", AnswerSHA256: ref.AnswerSHA256,
			Current: ref.AnswerSHA256 == ex.AnswerSHA256(), Cells: len(ref.Cells)})
	}
	stored, err := s.DB.References(c.Request.Context(), ex.ID)
	if err != nil {
		s.problem(c, err)
		return
	}
	for _, r := range stored {
		var cells map[string]any
		_ = json.Unmarshal(r.Cells, &cells)
		at := r.RecordedAt
		out = append(out, ReferenceJSON{Profile: r.Profile, Source: "database", AnswerSHA256: r.AnswerSHA256,
			Current: r.AnswerSHA256 == ex.AnswerSHA256(), Cells: len(cells), RunnerID: r.RunnerID, JobID: r.JobID, RecordedAt: &at})
	}
	c.JSON(http.StatusOK, out)
}

// ReferenceRequest is the body of POST /api/v1/exercises/{id}/references.
type ReferenceRequest struct {
	Profile string `json:"profile"`
}

func (s *Server) recordReference(c *gin.Context) {
	var req ReferenceRequest
	if !s.bindJSON(c, &req, func(err error) error {
		return domain.Errorf(domain.EINVALID, "the body must be JSON {\"profile\": \"npu-a2\"}: %v", err)
	}) {
		return
	}
	if req.Profile == "" {
		s.problem(c, domain.Errorf(domain.EINVALID, "\"profile\" is required (cpu, npu-a2, npu-a3 or npu-950)"))
		return
	}
	id, err := s.Dispatch.EnqueueReference(c.Request.Context(), c.Param("id"), req.Profile)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"job_id": id, "exercise": c.Param("id"), "profile": req.Profile, "status": domain.JobQueued})
}
