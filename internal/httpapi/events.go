package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

// eventRoutes mounts GET /api/v1/events: the outbox, read with a cursor,
// so that an integration follows scores (score-changed, graded, failed,
// regrade-applied) without polling submissions.
func (s *Server) eventRoutes(api *gin.RouterGroup) {
	api.GET("/events", s.requireRole(domain.RoleInstructor, domain.RoleAdmin), s.listEvents)
}

// EventJSON is one item of GET /api/v1/events.
type EventJSON struct {
	ID        int64           `json:"id"`
	Kind      string          `json:"kind"`
	Subject   string          `json:"subject"`
	CreatedAt time.Time       `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`
}

// EventsJSON is GET /api/v1/events: the events after the cursor, and the
// cursor to ask with next (the last id given, or the one asked with).
type EventsJSON struct {
	Events []EventJSON `json:"events"`
	Next   string      `json:"next"`
}

var eventKinds = map[string]bool{domain.EventGraded: true, domain.EventChecked: true, domain.EventFailed: true,
	domain.EventRegradeApplied: true, domain.EventScoreChanged: true}

func (s *Server) listEvents(c *gin.Context) {
	ctx := c.Request.Context()
	var f domain.EventFilter
	var problems []string
	if a := c.Query("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			problems = append(problems, "after: a cursor from an earlier reply (a number >= 0)")
		}
		f.After = n
	}
	for _, k := range strings.Split(c.Query("kind"), ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !eventKinds[k] {
			problems = append(problems, "kind "+strconv.Quote(k)+": want graded, failed, regrade-applied or score-changed")
			continue
		}
		f.Kinds = append(f.Kinds, k)
	}
	f.Submission, f.Exercise = c.Query("submission"), c.Query("exercise")
	if name := c.Query("learner"); name != "" {
		u, err := s.DB.UserByName(ctx, name)
		if err != nil {
			problems = append(problems, "learner "+strconv.Quote(name)+": "+domain.ErrorMessage(err))
		}
		f.LearnerID = u.ID
	}
	if since := c.Query("since"); since != "" {
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			problems = append(problems, "since: an RFC 3339 time, e.g. 2026-12-24T18:00:00Z")
		}
		f.Since = t
	}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			problems = append(problems, "limit: a number from 1 to 1000")
		}
		f.Limit = n
	}
	if len(problems) > 0 {
		s.problem(c, &domain.Error{Code: domain.EINVALID, Message: "the event query is not valid", Problems: problems})
		return
	}
	evs, err := s.DB.Events(ctx, f)
	if err != nil {
		s.problem(c, err)
		return
	}
	out := EventsJSON{Events: make([]EventJSON, len(evs)), Next: strconv.FormatInt(f.After, 10)}
	for i, e := range evs {
		out.Events[i] = EventJSON{ID: e.ID, Kind: e.Kind, Subject: e.Subject, CreatedAt: e.CreatedAt.UTC(), Payload: e.Payload}
		out.Next = strconv.FormatInt(e.ID, 10)
	}
	c.JSON(http.StatusOK, out)
}
