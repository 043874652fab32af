package ltitest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/events"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/lti"
	"github.com/npugrade/npugrade/internal/lti/ltitest"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestJWKSRotation: /lti/jwks publishes public keys only; after a
// rotation it lists the new key and the previous one, until the
// retention ends; scores are still accepted (the platform verifies the
// client assertion with the new key).
func TestJWKSRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	kids := func() []string {
		t.Helper()
		resp, body := get(t, http.DefaultClient, e.ts.URL+"/lti/jwks")
		var set struct {
			Keys []map[string]any `json:"keys"`
		}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &set) != nil {
			t.Fatalf("jwks: %d %s", resp.StatusCode, body)
		}
		var out []string
		for _, k := range set.Keys {
			if _, private := k["d"]; private || k["kty"] != "RSA" || k["use"] != "sig" {
				t.Fatalf("jwks publishes %v", k)
			}
			out = append(out, k["kid"].(string))
		}
		return out
	}
	first := kids()
	if len(first) != 1 {
		t.Fatalf("first keys: %v", first)
	}
	kid, err := (&lti.Keys{DB: e.db}).Rotate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := kids(); len(got) != 2 || got[0] != kid || got[1] != first[0] {
		t.Fatalf("after a rotation: %v (want %s then %s)", got, kid, first[0])
	}
	later := time.Now().Add(lti.DefaultRetain + time.Hour)
	e.db.Clock = func() time.Time { return later }
	if got := kids(); len(got) != 1 || got[0] != kid {
		t.Fatalf("past the retention: %v", got)
	}
}

var (
	csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	keyField  = regexp.MustCompile(`name="k" value="([^"]+)"`)
	jwtField  = regexp.MustCompile(`name="JWT" value="([^"]+)"`)
	actionAt  = regexp.MustCompile(`action="([^"]+)" data-autopost`)
)

// TestDeepLinking: an instructor's Deep Linking launch opens the page
// listing the exercises; the choice comes back as a signed
// LtiDeepLinkingResponse (verified by the platform against /lti/jwks)
// holding a resource link to /lti/launch with custom exercise=gr and a
// line item, auto-posted to the platform's return URL (the page's CSP
// lets its form go there only); a learner's Deep Linking launch is refused.
func TestDeepLinking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	teacher := browser(t)
	claims := e.plat.ResourceLink("t-9", "course-9", "", ltitest.Instructor)
	claims[lti.ClaimMessageType] = lti.MessageDeepLinking
	delete(claims, lti.ClaimResourceLink)
	claims[lti.ClaimDLSettings] = map[string]any{"deep_link_return_url": e.plat.DeepLinkReturnURL(),
		"accept_types": []string{"ltiResourceLink"}, "accept_presentation_document_targets": []string{"iframe", "window"},
		"accept_multiple": true, "data": "opaque-data"}
	l := e.plat.Launch(t, teacher, e.ts.URL, claims)
	if l.Response.StatusCode != 200 || l.Response.Request.URL.Path != "/lti/deep-link" || !strings.Contains(l.Body, `value="gr"`) {
		t.Fatalf("deep linking launch: %d at %s: %.400s", l.Response.StatusCode, l.Response.Request.URL, l.Body)
	}
	csrf, key := csrfField.FindStringSubmatch(l.Body), keyField.FindStringSubmatch(l.Body)
	if csrf == nil || key == nil {
		t.Fatalf("no csrf or key on the page: %.400s", l.Body)
	}
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/lti/deep-link",
		strings.NewReader(url.Values{"csrf": {csrf[1]}, "k": {key[1]}, "exercise": {"gr"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.ts.URL)
	resp, err := teacher.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	action, tok := actionAt.FindStringSubmatch(body), jwtField.FindStringSubmatch(body)
	if resp.StatusCode != 200 || action == nil || tok == nil || action[1] != e.plat.DeepLinkReturnURL() {
		t.Fatalf("deep link answer: %d %.400s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action "+e.plat.Server.URL) {
		t.Errorf("the answer page's CSP does not let the form go to the platform: %s", csp)
	}
	pr, err := http.PostForm(action[1], url.Values{"JWT": {tok[1]}})
	if err != nil {
		t.Fatal(err)
	}
	pr.Body.Close()
	linked := e.plat.DeepLinked()
	if pr.StatusCode != 200 || len(linked) != 1 {
		t.Fatalf("the platform took %d responses (%d): %v", len(linked), pr.StatusCode, e.plat.Refusals())
	}
	c := linked[0]
	items, _ := c[lti.ClaimDLItems].([]any)
	if c[lti.ClaimMessageType] != lti.MessageDeepLinkResponse || c[lti.ClaimDLData] != "opaque-data" || len(items) != 1 ||
		c[lti.ClaimDeploymentID] != e.plat.DeploymentID {
		t.Fatalf("response claims: %v", c)
	}
	item := items[0].(map[string]any)
	custom, _ := item["custom"].(map[string]any)
	li, _ := item["lineItem"].(map[string]any)
	if item["type"] != "ltiResourceLink" || item["url"] != e.ts.URL+"/lti/launch" || custom["exercise"] != "gr" || li["resourceId"] != "gr" || li["scoreMaximum"] != 3.0 {
		t.Errorf("content item: %v", item)
	}
	// The request is answered once.
	req, _ = http.NewRequest(http.MethodPost, e.ts.URL+"/lti/deep-link",
		strings.NewReader(url.Values{"csrf": {csrf[1]}, "k": {key[1]}, "exercise": {"gr"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := teacher.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("answered twice: %v %v", resp.StatusCode, err)
	}

	learner := browser(t)
	claims["sub"], claims["email"] = "s-9", "s-9@example.edu"
	claims[lti.ClaimRoles] = []string{ltitest.Learner}
	l = e.plat.Launch(t, learner, e.ts.URL, claims)
	if l.Response.StatusCode != http.StatusForbidden || !strings.Contains(l.Body, "Only the course") {
		t.Errorf("a learner's deep linking launch: %d %.300s", l.Response.StatusCode, l.Body)
	}
}

// TestCanvasTokenAudience: a token endpoint that wants another aud
// than its URL (Canvas wants https://canvas.instructure.com/login/oauth2/token
// whatever the institution's host) refuses npugrade's assertion until
// the platform is registered with that audience (--audience); then the
// score passes.
func TestCanvasTokenAudience(t *testing.T) {
	t.Parallel()
	const canvasAud = "https://canvas.instructure.com/login/oauth2/token"
	for _, registered := range []string{"", canvasAud} {
		e := newEnvWith(t, "sqlite", envOptions{reg: func(p *domain.LTIPlatform) { p.Audience = registered }})
		e.plat.TokenAudience = canvasAud
		learner := browser(t)
		e.plat.Launch(t, browser(t), e.ts.URL, e.plat.ResourceLink("t-1", "course-1", "gr", ltitest.Instructor))
		if l := e.plat.Launch(t, learner, e.ts.URL, e.plat.ResourceLink("s-1", "course-1", "gr", ltitest.Learner)); l.Response.StatusCode != 200 {
			t.Fatalf("launch: %d", l.Response.StatusCode)
		}
		lena, _ := e.db.UserByName(context.Background(), "s-1@example.edu")
		sub, _, err := e.subs.Submit(context.Background(), intake.Request{User: lena, ExerciseID: "gr", Notebook: []byte(answer)})
		if err != nil {
			t.Fatal(err)
		}
		e.run(t, sub)
		scores := e.passBack(t, 2)
		switch {
		case registered == "" && (len(scores) != 0 || !strings.Contains(strings.Join(e.plat.Refusals(), ";"), "want aud "+canvasAud)):
			t.Errorf("without --audience: scores %+v, refusals %v", scores, e.plat.Refusals())
		case registered != "" && len(scores) != 1:
			t.Errorf("with --audience: scores %+v, refusals %v", scores, e.plat.Refusals())
		}
	}
}

// TestRosterSync: the course's NRPS roster (three pages) comes into its
// cohort: new people are made by the roster import, each linked to the
// platform's user id (a score of theirs can be sent before they ever
// launch) with the course role; syncing again changes nothing; a member
// the platform lists as inactive leaves the cohort.
func TestRosterSync(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, d)
			e.plat.Launch(t, browser(t), e.ts.URL, e.plat.ResourceLink("t-1", "course-1", "gr", ltitest.Instructor))
			ms := []ltitest.Member{
				{UserID: "t-1", Roles: []string{ltitest.Instructor}, Email: "t-1@example.edu", Name: "Teacher"},
				{UserID: "s-1", Roles: []string{ltitest.Learner}, SourcedID: "2026001", Name: "Li Lei"},
				{UserID: "s-2", Roles: []string{ltitest.Learner}, SourcedID: "2026002", Name: "Han Meimei"},
				{UserID: "s-3", Roles: []string{"Learner"}, Email: "s3@example.edu", Name: "Wang Fang"},
				{UserID: "ta", Roles: []string{"http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"}, Email: "ta@example.edu"},
			}
			e.plat.SetMembers(ms)
			lc, err := e.db.LTIContext(ctx, 1, "course-1")
			if err != nil || lc.MembershipsURL != e.plat.MembershipsURL() {
				t.Fatalf("context: %+v %v", lc, err)
			}
			roster := e.parts.Roster
			res, err := roster.Sync(ctx, lc.ID)
			if err != nil || res.Members != 5 || res.Created != 4 || len(res.Skipped) != 0 {
				t.Fatalf("first sync: %+v %v", res, err)
			}
			members, _ := e.db.CohortMembers(ctx, lc.CohortID)
			roles := map[string]domain.Role{}
			for _, m := range members {
				roles[m.Name] = m.Role
			}
			if roles["2026001"] != domain.RoleLearner || roles["s3@example.edu"] != domain.RoleLearner || roles["ta@example.edu"] != domain.RoleInstructor ||
				roles["t-1@example.edu"] != domain.RoleInstructor || len(roles) != 5 {
				t.Fatalf("cohort after the sync: %v", roles)
			}
			li, _ := e.db.UserByName(ctx, "2026001")
			if sub, err := e.db.LTISubject(ctx, e.plat.Issuer, li.ID); err != nil || sub != "s-1" {
				t.Errorf("Li Lei's platform id: %q %v", sub, err)
			}
			if res, err := roster.Sync(ctx, lc.ID); err != nil || res.Created != 0 || res.Members != 5 {
				t.Errorf("second sync: %+v %v", res, err)
			}
			ms[2].Status = "Inactive"
			e.plat.SetMembers(ms)
			if res, err := roster.Sync(ctx, lc.ID); err != nil || res.Removed != 1 || res.Members != 4 {
				t.Errorf("sync with an inactive member: %+v %v", res, err)
			}
			if members, _ := e.db.CohortMembers(ctx, lc.CohortID); len(members) != 4 {
				t.Errorf("the inactive member is still in the cohort: %+v", members)
			}
			// The synced learner's launch finds the same user.
			l := e.plat.Launch(t, browser(t), e.ts.URL, e.plat.ResourceLink("s-1", "course-1", "gr", ltitest.Learner))
			if l.Response.StatusCode != 200 {
				t.Fatalf("synced learner's launch: %d %.300s", l.Response.StatusCode, l.Body)
			}
			if u, _ := e.db.UserByName(ctx, "s-1@example.edu"); u.ID != 0 {
				t.Errorf("the launch made a second user for a synced learner")
			}
		})
	}
}

// TestAdminPlatformsPage: an admin registers a platform on /admin/lti
// (every problem of a bad one at once, 422), sees it listed with
// npugrade's values to paste, and the registration is audit-logged; an
// instructor may not open the page.
func TestAdminPlatformsPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, "sqlite")
	_, token, err := e.db.CreateUser(ctx, "root", domain.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	admin := browser(t)
	form := func(c *http.Client, path string, v url.Values) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, e.ts.URL+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.ts.URL)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, _ := form(admin, "/login", url.Values{"token": {token}, "next": {"/admin/lti"}}); resp.Request.URL.Path != "/admin/lti" {
		t.Fatalf("sign-in went to %s", resp.Request.URL)
	}
	resp, page := get(t, admin, e.ts.URL+"/admin/lti")
	csrf := csrfField.FindStringSubmatch(page)
	if resp.StatusCode != 200 || csrf == nil || !strings.Contains(page, e.ts.URL+"/lti/jwks") || !strings.Contains(page, e.plat.Issuer) {
		t.Fatalf("admin page: %d %.500s", resp.StatusCode, page)
	}
	resp, page = form(admin, "/admin/lti", url.Values{"csrf": {csrf[1]}, "issuer": {"https://moodle.example.edu"}, "client_id": {"c"},
		"deployment_ids": {""}, "auth_url": {"http://moodle.example.edu/a"}, "token_url": {"https://moodle.example.edu/t"}, "jwks_url": {"https://moodle.example.edu/j"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "deployment ids: none") || !strings.Contains(page, "auth login URL") {
		t.Errorf("bad registration: %d %.600s", resp.StatusCode, page)
	}
	resp, page = form(admin, "/admin/lti", url.Values{"csrf": {csrf[1]}, "name": {"Moodle"}, "issuer": {"https://moodle.example.edu"}, "client_id": {"c"},
		"deployment_ids": {"1, 2"}, "auth_url": {"https://moodle.example.edu/a"}, "token_url": {"https://moodle.example.edu/t"}, "jwks_url": {"https://moodle.example.edu/j"}})
	if resp.StatusCode != http.StatusCreated || !strings.Contains(page, "https://moodle.example.edu/t") {
		t.Errorf("registration: %d %.600s", resp.StatusCode, page)
	}
	if ps, _ := e.db.LTIPlatforms(ctx); len(ps) != 2 || ps[1].Name != "Moodle" || len(ps[1].DeploymentIDs) != 2 || ps[1].DeploymentIDs[1] != "2" {
		t.Errorf("platforms: %+v", ps)
	}
	evs, _ := e.db.AuditEvents(ctx, 10)
	if len(evs) == 0 || evs[0].Action != domain.AuditLTIPlatformAdded || evs[0].Actor != "root" {
		t.Errorf("audit: %+v", evs)
	}
	teacher := browser(t)
	e.plat.Launch(t, teacher, e.ts.URL, e.plat.ResourceLink("t-1", "course-1", "gr", ltitest.Instructor))
	if resp, _ := get(t, teacher, e.ts.URL+"/admin/lti"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("instructor on the admin page: %d", resp.StatusCode)
	}
}

// cookieSpy records the Set-Cookie headers of every response.
type cookieSpy struct {
	next    http.RoundTripper
	cookies []string
}

func (s *cookieSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err == nil {
		s.cookies = append(s.cookies, resp.Header.Values("Set-Cookie")...)
	}
	return resp, err
}

// TestLaunchCookieAndFraming: over https an LTI launch's session cookie
// is SameSite=None and Secure (the LMS's iframe sends no other kind);
// the pages may be framed by the registered LMS only; a launch over
// plain http from a host that is not loopback is refused (403, audited).
func TestLaunchCookieAndFraming(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, "sqlite", envOptions{tls: true})
	spy := &cookieSpy{next: e.ts.Client().Transport}
	client := browser(t)
	client.Transport = spy
	l := e.plat.Launch(t, client, e.ts.URL, e.plat.ResourceLink("t-1", "course-1", "gr", ltitest.Instructor))
	if l.Response.StatusCode != 200 {
		t.Fatalf("launch over https: %d %.300s", l.Response.StatusCode, l.Body)
	}
	session := ""
	for _, c := range spy.cookies {
		if strings.HasPrefix(c, "npugrade_session=") {
			session = c
		}
	}
	if !strings.Contains(session, "SameSite=None") || !strings.Contains(session, "Secure") || !strings.Contains(session, "HttpOnly") {
		t.Errorf("session cookie of an LTI launch: %q", session)
	}
	csp := l.Response.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'self' "+e.plat.Server.URL) || l.Response.Header.Get("X-Frame-Options") != "" {
		t.Errorf("framing: CSP %q, X-Frame-Options %q", csp, l.Response.Header.Get("X-Frame-Options"))
	}

	plain := newEnv(t, "sqlite")
	req, _ := http.NewRequest(http.MethodPost, plain.ts.URL+"/lti/launch", strings.NewReader("id_token=x&state=y"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Host = "grade.example.edu"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "https only") || !audited(t, plain.db, "lti https") {
		t.Errorf("plain http launch: %d %.300s", resp.StatusCode, b)
	}
}

// TestTwoServersSendOnce: two servers' senders on one database, sending
// at once to a slow platform, post each owed score once: a row is leased
// in the database, not in either process.
func TestTwoServersSendOnce(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := storetest.URL(t, d)
			first := storetest.OpenURL(t, dbURL)
			e := newEnvWith(t, d, envOptions{db: first})
			e.plat.Launch(t, browser(t), e.ts.URL, e.plat.ResourceLink("t-1", "course-1", "gr", ltitest.Instructor))
			var subs []string
			for _, s := range []string{"s-1", "s-2", "s-3"} {
				e.plat.Launch(t, browser(t), e.ts.URL, e.plat.ResourceLink(s, "course-1", "gr", ltitest.Learner))
				u, _ := e.db.UserByName(ctx, s+"@example.edu")
				sub, _, err := e.subs.Submit(ctx, intake.Request{User: u, ExerciseID: "gr", Notebook: []byte(answer)})
				if err != nil {
					t.Fatal(err)
				}
				e.run(t, sub)
				subs = append(subs, sub.ID)
			}
			if _, err := (&events.Deliverer{DB: e.db, Notifier: e.parts.Grades}).DeliverOnce(ctx); err != nil {
				t.Fatal(err)
			}
			second := compose.LTI(storetest.OpenURL(t, dbURL), e.cat, e.ts.URL, nil)
			second.Sender.Backoff = e.parts.Sender.Backoff
			// One score a round each, so that both send at once.
			e.parts.Sender.Batch, second.Sender.Batch = 1, 1
			e.plat.SlowScores(100 * time.Millisecond)
			var wg sync.WaitGroup
			for _, s := range []*lti.Sender{e.parts.Sender, second.Sender} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 6 {
						if _, err := s.SendOnce(ctx); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
			scores := e.plat.Scores()
			users := map[string]int{}
			for _, s := range scores {
				users[s.UserID]++
			}
			if len(scores) != 3 || users["s-1"] != 1 || users["s-2"] != 1 || users["s-3"] != 1 {
				t.Errorf("scores from two senders: %+v", scores)
			}
			if items := e.plat.LineItems(); len(items) != 1 {
				t.Errorf("two senders made %d line items of one exercise: %+v", len(items), items)
			}
		})
	}
}
