package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/web"
)

func jsonEncode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ExerciseJSON is one item of GET /api/v1/exercises.
type ExerciseJSON struct {
	ID        string  `json:"id"`
	Title     string  `json:"title"`
	TitleEN   string  `json:"title_en"`
	MaxPoints float64 `json:"max_points"`
	// MaxPointsCPU counts only the questions a CPU runner can grade.
	MaxPointsCPU float64 `json:"max_points_cpu"`
	Questions    int     `json:"questions"`
	Version      string  `json:"version"`
	Notebook     string  `json:"notebook"`
}

func (s *Server) listExercises(c *gin.Context) {
	out := []ExerciseJSON{}
	for _, ex := range s.Catalog.List() {
		out = append(out, ExerciseJSON{
			ID: ex.ID, Title: ex.Title, TitleEN: ex.TitleEN, MaxPoints: ex.MaxPoints(nil),
			MaxPointsCPU: ex.MaxPoints(func(r domain.Requirement) bool { ok, _ := domain.CPUMatcher(r); return ok }),
			Questions:    len(ex.Graded), Version: ex.Version, Notebook: ex.Config.Starter,
		})
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) starterNotebook(c *gin.Context) {
	ex, err := s.Catalog.Get(c.Param("id"))
	if err != nil {
		s.problem(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+ex.Config.Starter+`"`)
	c.Data(http.StatusOK, "application/x-ipynb+json", ex.StarterBytes)
}

// CellJSON is a graded cell's result with the number the notebook gives
// its question ("第 13 题"), so a client names it as the learner reads it.
type CellJSON struct {
	domain.CellResult
	Question int `json:"question,omitempty"`
	// HiddenTest marks a probe: the question's test on inputs the learner
	// does not see.
	HiddenTest bool `json:"hidden_test,omitempty"`
}

// SubmissionJSON is the API form of a submission.
type SubmissionJSON struct {
	ID       string `json:"id"`
	Exercise string `json:"exercise"`
	// Kind is "submission" (counted) or "check" (uncounted).
	Kind            string     `json:"kind"`
	User            string     `json:"user,omitempty"`
	Status          string     `json:"status"`
	Score           float64    `json:"score"`
	MaxScore        float64    `json:"max_score"`
	Message         string     `json:"message,omitempty"`
	Profile         string     `json:"profile,omitempty"`
	ExerciseVersion string     `json:"exercise_version"`
	GraderVersion   string     `json:"grader_version,omitempty"`
	EnvFingerprint  string     `json:"env_fingerprint,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	GradedAt        *time.Time `json:"graded_at,omitempty"`
	Cells           []CellJSON `json:"cells"`
	// WaitingFor says what a queued submission waits for when no runner
	// online can grade it (fleet.WaitingFor).
	WaitingFor string `json:"waiting_for,omitempty"`
}

// toJSON is the API form of s; for a reader who prefers Chinese
// (Accept-Language, the page's language cookie) the grader's messages are
// in the words the pages use.
func (srv *Server) toJSON(c *gin.Context, s domain.Submission) SubmissionJSON {
	ex, _ := srv.Catalog.Get(s.ExerciseID)
	zh := web.PrefersChinese(c.Request)
	if zh {
		s.Message = web.ChineseFeedback(s.Message)
	}
	// Learner output is stored as printed, any bytes; it is shown with
	// NUL, control characters and non-UTF-8 bytes as visible \xNN escapes.
	cells := make([]CellJSON, len(s.Cells))
	for i, cr := range s.Cells {
		if zh {
			cr.Message = web.ChineseFeedback(cr.Message)
		}
		cr.Message, cr.Observed, cr.Expected, cr.Diff = domain.Printable(cr.Message), domain.Printable(cr.Observed), domain.Printable(cr.Expected), domain.Printable(cr.Diff)
		cells[i] = CellJSON{CellResult: cr}
		if ex != nil {
			cells[i].Question, _ = ex.Question(cr.CellID)
			cells[i].HiddenTest = ex.IsProbe(cr.CellID)
		}
	}
	kind := "submission"
	if s.Check {
		kind = "check"
	}
	return SubmissionJSON{
		ID: s.ID, Exercise: s.ExerciseID, Kind: kind, User: s.UserName, Status: s.Status, Score: s.Score, MaxScore: s.MaxScore,
		Message: s.Message, Profile: s.Profile, ExerciseVersion: s.ExerciseVersion, GraderVersion: s.GraderVersion,
		EnvFingerprint: s.EnvFingerprint, CreatedAt: s.CreatedAt, StartedAt: s.StartedAt, GradedAt: s.GradedAt, Cells: cells,
	}
}

func (s *Server) createSubmission(c *gin.Context) { s.upload(c, false) }

// upload takes a notebook in as a submission or, with check, as an
// uncounted check: the same form, validation and grading.
func (s *Server) upload(c *gin.Context, check bool) {
	u := currentUser(c)
	max := s.maxUpload()
	// The body may carry multipart overhead beyond the notebook itself.
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, max+formOverhead)
	form, err := readUploadForm(c.Request, max)
	exerciseID, data := form.exercise, form.notebook
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, errNotebookTooLarge):
		s.Submissions.CountRefused(c.Request.Context(), u, exerciseID)
		s.problem(c, domain.Errorf(domain.ETOOLARGE, "the upload is larger than the %d byte limit", max))
		return
	case err != nil:
		s.Submissions.CountRefused(c.Request.Context(), u, exerciseID)
		s.problem(c, &domain.Error{Code: domain.EINVALID, Message: "the request must be multipart/form-data with fields \"exercise\" and \"notebook\"", Problems: []string{err.Error()}})
		return
	case data == nil:
		var problems []string
		if exerciseID == "" {
			problems = append(problems, "the form field \"exercise\" is required")
		} else if _, err := s.Catalog.Get(exerciseID); err != nil {
			problems = append(problems, "unknown exercise \""+exerciseID+"\"")
		}
		problems = append(problems, "the form file \"notebook\" is required")
		s.Submissions.CountRefused(c.Request.Context(), u, exerciseID)
		s.problem(c, &domain.Error{Code: domain.EINVALID, Message: "the submission is not valid", Problems: problems})
		return
	}
	sub, created, err := s.Submissions.Submit(c.Request.Context(), intake.Request{
		User: u, ExerciseID: exerciseID, Notebook: data, IdempotencyKey: c.GetHeader("Idempotency-Key"), Check: check, Cohort: form.cohort,
	})
	if err != nil {
		var rl *intake.RateLimitError
		if errors.As(err, &rl) {
			c.Header("Retry-After", strconv.Itoa(int(math.Ceil(rl.RetryAfter.Seconds()))))
		}
		if we := (*intake.WrongExerciseError)(nil); errors.As(err, &we) && web.PrefersChinese(c.Request) {
			err = we.Chinese()
		}
		s.problem(c, err)
		return
	}
	if created && s.Metrics != nil {
		s.Metrics.Submissions.Inc()
	}
	if check {
		c.Header("Location", "/api/v1/checks/"+sub.ID)
	} else {
		c.Header("Location", "/api/v1/submissions/"+sub.ID)
	}
	if !created {
		c.Header("Idempotent-Replayed", "true")
	}
	// A replay carries the stored, possibly graded submission: it gets the
	// same redaction as GET, or hidden questions' details would leak.
	c.JSON(http.StatusAccepted, s.toJSON(c, s.policy().Redact(c.Request.Context(), u, sub)))
}

// visible returns the submission if the caller may read it (unredacted).
// Another learner's submission is not found (policy.Readable).
func (s *Server) visible(c *gin.Context) (domain.Submission, bool) {
	sub, err := s.policy().Readable(c.Request.Context(), currentUser(c), c.Param("id"))
	if err != nil {
		s.problem(c, err)
		return sub, false
	}
	return sub, true
}

func (s *Server) getSubmission(c *gin.Context) {
	if sub, ok := s.visible(c); ok {
		j := s.toJSON(c, s.policy().Redact(c.Request.Context(), currentUser(c), sub))
		j.WaitingFor = s.waitingFor(c.Request.Context(), sub, web.PrefersChinese(c.Request))
		c.JSON(http.StatusOK, j)
	}
}

func (s *Server) executedNotebook(c *gin.Context) {
	sub, ok := s.visible(c)
	if !ok {
		return
	}
	b, err := s.policy().Executed(c.Request.Context(), currentUser(c), sub)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.Data(http.StatusOK, "application/x-ipynb+json", b)
}

func (s *Server) queueDepth(c *gin.Context) {
	d, err := s.Queue.Depth(c.Request.Context())
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, d)
}
