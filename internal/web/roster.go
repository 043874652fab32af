package web

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
)

// Rosters imports class rosters (accounts.Rosters; npugrade user import
// calls the same).
type Rosters interface {
	// ImportInto imports a roster whose rows without a cohort join
	// cohort (a slug; "": the default cohort for new users).
	ImportInto(ctx context.Context, actor domain.User, r io.Reader, cohort string) (domain.RosterResult, error)
}

// Sections lists the sections of a roster and the dashboard's views of
// one; "" is everyone.
type Sections interface {
	Sections(ctx context.Context) ([]string, error)
	SectionSubmissionsPerDay(ctx context.Context, days int, section string, loc *time.Location) ([]domain.DayCount, error)
	SectionRecentSubmissions(ctx context.Context, limit int, section string) ([]domain.Submission, error)
	// Learners are the learners in the staff member's scope (pickers).
	Learners(ctx context.Context) ([]domain.User, error)
}

// importRoster takes the admin page's roster upload. New users' tokens
// come back once, as a CSV download in the response itself (never stored,
// never in a URL); a roster that only updates people shows the users page
// with what changed; a bad one shows every problem.
func (h *handler) importRoster(c *gin.Context) {
	lang := c.GetString(ctxLang)
	ok := h.multipartForm(c, accounts.MaxBytes, func() {
		h.renderUsers(c, http.StatusRequestEntityTooLarge, usersData{Message: translate(lang, "roster.too_large")})
	})
	if !ok {
		return
	}
	defer c.Request.MultipartForm.RemoveAll()
	f, _, err := c.Request.FormFile("roster")
	if err != nil {
		h.renderUsers(c, http.StatusUnprocessableEntity, usersData{Message: translate(lang, "roster.choose")})
		return
	}
	defer f.Close()
	res, err := h.Rosters.ImportInto(c.Request.Context(), sessionOf(c).User, f, c.Request.FormValue("cohort"))
	if err != nil {
		h.refused(c, err, func(status int) { // 422, 413 or 409, as the API says them
			var probs []string
			for _, p := range domain.ErrorProblems(err) {
				probs = append(probs, problemText(lang, p))
			}
			h.renderUsers(c, status, usersData{Message: translate(lang, "roster.failed") + " " + problemText(lang, domain.ErrorMessage(err)),
				Problems: probs})
		})
		return
	}
	summary := strconv.Itoa(len(res.Created)) + " / " + strconv.Itoa(len(res.Updated)) + " / " + strconv.Itoa(res.Unchanged)
	if len(res.Created) == 0 {
		h.renderUsers(c, http.StatusOK, usersData{Notice: translate(lang, "roster.done") + " " + summary})
		return
	}
	var buf bytes.Buffer
	if err := accounts.WriteTokens(&buf, res.Created); err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Content-Disposition", `attachment; filename="roster-tokens-`+time.Now().UTC().Format("20060102-150405")+`.csv"`)
	c.Header("X-Npugrade-Roster", summary)
	c.Data(http.StatusCreated, "text/csv; charset=utf-8", buf.Bytes())
}
