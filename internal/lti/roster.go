package lti

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// RosterStore is what a roster sync reads and writes (store.DB).
type RosterStore interface {
	LTIContextByID(ctx context.Context, id int64) (domain.LTIContext, error)
	LTIPlatformByID(ctx context.Context, id int64) (domain.LTIPlatform, error)
	UsersByName(ctx context.Context, names []string) (map[string]domain.User, error)
	ImportRoster(ctx context.Context, actor domain.User, entries []domain.RosterEntry) (domain.RosterResult, error)
	ExternalUserIn(ctx context.Context, issuer, subject, login string, role domain.Role, cohortID int64) (domain.User, error)
	AddCohortMember(ctx context.Context, cohortID, userID int64, role domain.Role) error
	RemoveCohortMember(ctx context.Context, cohortID, userID int64) error
}

// Roster syncs a course's roster from its platform's Names and Role
// Provisioning Service (NRPS 2.0) into its cohort.
type Roster struct {
	DB RosterStore
	// Sender makes the service calls (its token cache and client).
	Sender *Sender
}

// RosterSync is what a sync did.
type RosterSync struct {
	Members int      // active members listed
	Created int      // users the roster import made
	Removed int      // members the platform lists as inactive or deleted, taken out of the cohort
	Skipped []string // members that could not be linked, with why
}

// member is one NRPS membership.
type member struct {
	UserID     string   `json:"user_id"`
	Roles      []string `json:"roles"`
	Status     string   `json:"status"`
	Name       string   `json:"name"`
	Email      string   `json:"email"`
	SourcedID  string   `json:"lis_person_sourcedid"`
	GivenName  string   `json:"given_name"`
	FamilyName string   `json:"family_name"`
}

// login is the member's npugrade name, chosen as a launch's is.
func (m member) login(issuer string) string {
	c := launchClaims{Issuer: issuer, Subject: m.UserID, Email: m.Email}
	c.LIS.PersonSourcedID = m.SourcedID
	return c.login()
}

var nextLink = regexp.MustCompile(`<([^>]+)>\s*;\s*rel="?next"?`)

// Sync reads every page of the context's memberships: new people are
// made by the roster import (users with a token, audit-logged), each is
// linked to the platform's user id (so their scores reach the LMS before
// their first launch) and made a member of the cohort with their role;
// an inactive or deleted member leaves it. A user's role outside the
// cohort is never changed here.
func (r *Roster) Sync(ctx context.Context, contextPK int64) (RosterSync, error) {
	var out RosterSync
	lc, err := r.DB.LTIContextByID(ctx, contextPK)
	if err != nil {
		return out, err
	}
	if lc.MembershipsURL == "" {
		return out, domain.Errorf(domain.EINVALID, "course %q has no roster service (NRPS is not enabled for the tool, or no launch came from the course yet)", lc.Title)
	}
	p, err := r.DB.LTIPlatformByID(ctx, lc.PlatformID)
	if err != nil {
		return out, err
	}
	members, err := r.fetch(ctx, p, lc.MembershipsURL)
	if err != nil {
		return out, err
	}
	var entries []domain.RosterEntry
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.login(p.Issuer))
	}
	known, err := r.DB.UsersByName(ctx, names)
	if err != nil {
		return out, err
	}
	for i, m := range members {
		if _, ok := known[names[i]]; !ok && active(m) {
			entries = append(entries, domain.RosterEntry{Name: names[i], FullName: m.Name, Role: Role(m.Roles)})
		}
	}
	if len(entries) > 0 {
		res, err := r.DB.ImportRoster(ctx, domain.User{Name: "lti"}, entries)
		if err != nil {
			return out, err
		}
		out.Created = len(res.Created)
	}
	for i, m := range members {
		r.apply(ctx, p, lc, m, names[i], &out)
	}
	return out, nil
}

func active(m member) bool { return m.Status == "" || strings.EqualFold(m.Status, "Active") }

// apply links one member and sets their place in the cohort.
func (r *Roster) apply(ctx context.Context, p domain.LTIPlatform, lc domain.LTIContext, m member, login string, out *RosterSync) {
	role := Role(m.Roles)
	u, err := r.DB.ExternalUserIn(ctx, p.Issuer, m.UserID, login, role, lc.CohortID)
	if err != nil {
		out.Skipped = append(out.Skipped, login+": "+domain.ErrorMessage(err))
		return
	}
	if !active(m) {
		if err := r.DB.RemoveCohortMember(ctx, lc.CohortID, u.ID); err != nil {
			out.Skipped = append(out.Skipped, login+": "+err.Error())
			return
		}
		out.Removed++
		return
	}
	if err := r.DB.AddCohortMember(ctx, lc.CohortID, u.ID, role); err != nil {
		out.Skipped = append(out.Skipped, login+": "+err.Error())
		return
	}
	out.Members++
}

// fetch reads the membership container and its next pages (NRPS 2.0
// 2.4: a Link header with rel="next"), at most 100 pages.
func (r *Roster) fetch(ctx context.Context, p domain.LTIPlatform, u string) ([]member, error) {
	var all []member
	for page := 0; u != "" && page < 100; page++ {
		b, h, err := r.Sender.get(ctx, p, u, "application/vnd.ims.lti-nrps.v2.membershipcontainer+json", ScopeNRPS)
		if err != nil {
			return nil, fmt.Errorf("read the roster at %s: %w", u, err)
		}
		var c struct {
			Members []member `json:"members"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("read the roster at %s: %w", u, err)
		}
		for _, m := range c.Members {
			if m.UserID != "" {
				all = append(all, m)
			}
		}
		u = ""
		if m := nextLink.FindStringSubmatch(h.Get("Link")); m != nil {
			u = m[1]
		}
	}
	return all, nil
}

// get is a GET with a token of scope that also returns the headers.
func (s *Sender) get(ctx context.Context, p domain.LTIPlatform, u, accept, scope string) ([]byte, http.Header, error) {
	var h http.Header
	b, err := s.do(ctx, p, http.MethodGet, u, "", accept, nil, scope, func(resp *http.Response) { h = resp.Header })
	return b, h, err
}
