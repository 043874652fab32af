package httpapi_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// cohortsEnv is two cohorts on one server: spring (instructor ina,
// learner ada) and autumn (instructor inb, learner bob), each learner
// with one graded submission, and an admin.
type cohortsEnv struct {
	*policyEnv
	admin, ina, inb string
	ada, bob        string // the learners' tokens
	adaSub, bobSub  string
}

func newCohortsEnv(t *testing.T, d string) *cohortsEnv {
	t.Helper()
	return newCohortsEnvWith(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb",
		"deadline": "2026-03-01T12:00:00Z"}`)
}

// newCohortsEnvWith is newCohortsEnv over the exercise "pol" configured
// by exerciseJSON.
func newCohortsEnvWith(t *testing.T, d, exerciseJSON string) *cohortsEnv {
	t.Helper()
	ctx := context.Background()
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := &cohortsEnv{policyEnv: newPolicyEnv(t, d, exerciseJSON)}
	e.db.Clock = func() time.Time { return due.Add(48 * time.Hour) }
	_, e.admin, _ = e.db.CreateUser(ctx, "root", domain.RoleAdmin)
	for _, slug := range []string{"spring", "autumn"} {
		if st, body := e.call(t, http.MethodPost, "/api/v1/cohorts", e.admin, `{"slug": "`+slug+`", "title": "TorchAir `+slug+`"}`); st != http.StatusCreated {
			t.Fatalf("create %s: %d %s", slug, st, body)
		}
	}
	def, _ := e.db.CohortBySlug(ctx, domain.DefaultCohort)
	member := func(name string, role domain.Role, slug string) string {
		u, token, err := e.db.CreateUser(ctx, name, role)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.db.RemoveCohortMember(ctx, def.ID, u.ID); err != nil {
			t.Fatal(err)
		}
		if st, body := e.call(t, http.MethodPut, "/api/v1/cohorts/"+slug+"/members/"+name, e.admin, `{"role": "`+string(role)+`"}`); st != http.StatusOK {
			t.Fatalf("member %s of %s: %d %s", name, slug, st, body)
		}
		return token
	}
	e.ina, e.inb = member("ina", domain.RoleInstructor, "spring"), member("inb", domain.RoleInstructor, "autumn")
	e.ada, e.bob = member("ada", domain.RoleLearner, "spring"), member("bob", domain.RoleLearner, "autumn")
	cells := []domain.CellResult{{CellID: "open", Verdict: "pass", Points: 1, MaxPoints: 1, Counted: true}}
	e.adaSub = e.graded(t, e.ada, "", store.Grade{Score: 1, MaxScore: 1, Profile: "cpu", Cells: cells})
	e.bobSub = e.graded(t, e.bob, "", store.Grade{Score: 1, MaxScore: 1, Profile: "cpu", Cells: cells})
	return e
}

// sees reports whether body (a reply to token for path) names want and
// not hidden.
func (e *cohortsEnv) sees(t *testing.T, who, token, path string, want, hidden []string) {
	t.Helper()
	st, body := e.get(t, token, path)
	if st != http.StatusOK {
		t.Errorf("%s GET %s: %d %s", who, path, st, body)
		return
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s GET %s lacks %q: %s", who, path, w, body)
		}
	}
	for _, h := range hidden {
		if strings.Contains(body, h) {
			t.Errorf("%s GET %s shows %q of another cohort: %s", who, path, h, body)
		}
	}
}

// TestCohortsStaffSeeOnlyTheirCohort is the cohorts' done-when over the
// API: with two cohorts on one server, each instructor's submissions
// list, submission by id, gradebook CSV, events and extensions hold only
// their cohort's; another cohort's submission is 404 and another
// cohort's learner is not found; the admin sees both; ?cohort= narrows
// to a cohort the caller sees and refuses one they do not.
func TestCohortsStaffSeeOnlyTheirCohort(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newCohortsEnv(t, d)
			ada, bob := `"user":"ada"`, `"user":"bob"`
			e.sees(t, "ina", e.ina, "/api/v1/submissions", []string{e.adaSub, ada}, []string{e.bobSub, bob})
			e.sees(t, "inb", e.inb, "/api/v1/submissions", []string{e.bobSub, bob}, []string{e.adaSub, ada})
			e.sees(t, "admin", e.admin, "/api/v1/submissions", []string{e.adaSub, e.bobSub}, nil)
			e.sees(t, "admin", e.admin, "/api/v1/submissions?cohort=autumn", []string{e.bobSub}, []string{e.adaSub})
			if st, body := e.get(t, e.ina, "/api/v1/submissions?learner=bob"); st != http.StatusUnprocessableEntity {
				t.Errorf("ina names bob: %d %s, want 422 (no such learner)", st, body)
			}
			if st, body := e.get(t, e.ina, "/api/v1/submissions?cohort=autumn"); st != http.StatusUnprocessableEntity || !strings.Contains(body, "no such cohort") {
				t.Errorf("ina picks autumn: %d %s, want 422", st, body)
			}

			if st, _ := e.get(t, e.ina, "/api/v1/submissions/"+e.adaSub); st != http.StatusOK {
				t.Errorf("ina reads ada's submission: %d", st)
			}
			for _, p := range []string{"", "/executed"} {
				if st, body := e.get(t, e.ina, "/api/v1/submissions/"+e.bobSub+p); st != http.StatusNotFound {
					t.Errorf("ina reads bob's submission%s: %d %s, want 404", p, st, body)
				}
			}
			if st, _ := e.get(t, e.admin, "/api/v1/submissions/"+e.bobSub); st != http.StatusOK {
				t.Errorf("admin reads bob's submission: %d", st)
			}

			e.sees(t, "ina", e.ina, "/api/v1/gradebook.csv", []string{"ada,pol"}, []string{"bob"})
			e.sees(t, "inb", e.inb, "/api/v1/gradebook.csv", []string{"bob,pol"}, []string{"ada"})
			e.sees(t, "admin", e.admin, "/api/v1/gradebook.csv", []string{"ada,pol", "bob,pol"}, nil)
			e.sees(t, "admin", e.admin, "/api/v1/gradebook.csv?cohort=spring", []string{"ada,pol"}, []string{"bob"})

			e.sees(t, "ina", e.ina, "/api/v1/events", []string{e.adaSub}, []string{e.bobSub})
			e.sees(t, "inb", e.inb, "/api/v1/events", []string{e.bobSub}, []string{e.adaSub})
			e.sees(t, "admin", e.admin, "/api/v1/events", []string{e.adaSub, e.bobSub}, nil)

			e.sees(t, "ina", e.ina, "/api/v1/exercises/pol/similarity?threshold=0.01", nil, []string{"bob", e.bobSub})
			e.sees(t, "ina", e.ina, "/api/v1/submissions/"+e.adaSub+"/history", nil, nil)
			if st, _ := e.get(t, e.ina, "/api/v1/submissions/"+e.bobSub+"/history"); st != http.StatusNotFound {
				t.Errorf("ina reads bob's score history: %d, want 404", st)
			}

			const ext = "/api/v1/exercises/pol/extensions"
			if st, body := e.call(t, http.MethodPost, ext, e.ina, `{"learner": "bob", "deadline": "2026-04-01T00:00:00Z"}`); st != http.StatusUnprocessableEntity || !strings.Contains(body, "not found") {
				t.Errorf("ina extends bob: %d %s, want 422 (not found)", st, body)
			}
			if st, body := e.call(t, http.MethodDelete, ext+"/bob", e.ina, ""); st != http.StatusNotFound {
				t.Errorf("ina revokes bob's: %d %s, want 404", st, body)
			}
			for _, g := range []struct{ token, learner string }{{e.ina, "ada"}, {e.inb, "bob"}} {
				if st, body := e.call(t, http.MethodPost, ext, g.token, `{"learner": "`+g.learner+`", "deadline": "2026-04-01T00:00:00Z"}`); st != http.StatusCreated {
					t.Fatalf("extend %s: %d %s", g.learner, st, body)
				}
			}
			e.sees(t, "ina", e.ina, ext, []string{`"learner":"ada"`}, []string{`"learner":"bob"`})
			e.sees(t, "inb", e.inb, ext, []string{`"learner":"bob"`}, []string{`"learner":"ada"`})
			e.sees(t, "admin", e.admin, ext, []string{`"learner":"ada"`, `"learner":"bob"`}, nil)

			// Writes by id reach no further than reads: grading another
			// cohort's submission by hand is not found either.
			if st, body := e.call(t, http.MethodPut, "/api/v1/submissions/"+e.bobSub+"/manual/open", e.ina, `{"items": [], "adjustment": 0, "comment": ""}`); st != http.StatusNotFound {
				t.Errorf("ina grades bob's submission by hand: %d %s, want 404", st, body)
			}
			if st, body := e.call(t, http.MethodPost, "/api/v1/submissions/"+e.bobSub+"/regrade-requests", e.bob, `{"cell": "open", "message": "please look again"}`); st != http.StatusCreated {
				t.Fatalf("bob asks for a regrade: %d %s", st, body)
			}
			e.sees(t, "ina", e.ina, "/api/v1/regrade-requests", nil, []string{e.bobSub})
			e.sees(t, "inb", e.inb, "/api/v1/regrade-requests", []string{e.bobSub}, nil)
			// A regrade ina stages covers her cohort's submissions only,
			// and inb can neither read nor discard it.
			st, body := e.call(t, http.MethodPost, "/api/v1/regrades", e.ina, `{"exercise": "pol", "mode": "reexecute", "all": true}`)
			if st/100 != 2 || !strings.Contains(body, e.adaSub) || strings.Contains(body, e.bobSub) {
				t.Errorf("ina stages a regrade: %d %s, want ada's submission only", st, body)
			}
			if rid := between(body, `"id":`, `,`); rid != "" {
				for _, p := range []string{"", "/discard"} {
					method := map[string]string{"": http.MethodGet, "/discard": http.MethodPost}[p]
					if st, body := e.call(t, method, "/api/v1/regrades/"+rid+p, e.inb, ""); st != http.StatusNotFound {
						t.Errorf("inb %s regrade %s%s: %d %s, want 404", method, rid, p, st, body)
					}
				}
				if st, _ := e.call(t, http.MethodGet, "/api/v1/regrades/"+rid, e.admin, ""); st != http.StatusOK {
					t.Errorf("admin reads the regrade: %d", st)
				}
			}
			e.sees(t, "ina", e.ina, "/api/v1/cohorts", []string{`"slug":"spring"`}, []string{"autumn", `"default"`})
			e.sees(t, "admin", e.admin, "/api/v1/cohorts", []string{`"slug":"default"`, `"slug":"spring"`, `"slug":"autumn"`}, nil)
			// The instructor of the default cohort sees neither.
			e.sees(t, "tom", e.teacher, "/api/v1/submissions", nil, []string{e.adaSub, e.bobSub})
		})
	}
}

// TestCohortsManagementAPI: only admins manage cohorts; bad input is a
// problem, never a 5xx; a learner lists the cohorts they are in and
// submits in one of them with the form field "cohort".
func TestCohortsManagementAPI(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newCohortsEnv(t, d)
			for _, c := range []struct {
				who, method, path, token, body string
				want                           int
			}{
				{"instructor creates", http.MethodPost, "/api/v1/cohorts", e.ina, `{"slug": "x"}`, http.StatusForbidden},
				{"bad slug", http.MethodPost, "/api/v1/cohorts", e.admin, `{"slug": "Not A Slug"}`, http.StatusUnprocessableEntity},
				{"not JSON", http.MethodPost, "/api/v1/cohorts", e.admin, `{`, http.StatusUnprocessableEntity},
				{"no such cohort", http.MethodPut, "/api/v1/cohorts/nope/members/ada", e.admin, `{"role": "learner"}`, http.StatusNotFound},
				{"no such user", http.MethodPut, "/api/v1/cohorts/spring/members/ghost", e.admin, `{"role": "learner"}`, http.StatusNotFound},
				{"bad role", http.MethodPut, "/api/v1/cohorts/spring/members/ada", e.admin, `{"role": "admin"}`, http.StatusUnprocessableEntity},
				{"learner teaches", http.MethodPut, "/api/v1/cohorts/spring/members/ada", e.admin, `{"role": "instructor"}`, http.StatusUnprocessableEntity},
				{"instructor adds", http.MethodPut, "/api/v1/cohorts/spring/members/bob", e.ina, `{"role": "learner"}`, http.StatusForbidden},
			} {
				if st, body := e.call(t, c.method, c.path, c.token, c.body); st != c.want {
					t.Errorf("%s: %d %s, want %d", c.who, st, body, c.want)
				}
			}
			// bob joins spring too (no body: as a learner) and submits in
			// autumn by name: ina does not see that submission, inb does.
			if st, body := e.call(t, http.MethodPut, "/api/v1/cohorts/spring/members/bob", e.admin, ""); st != http.StatusOK || !strings.Contains(body, `"role":"learner"`) {
				t.Fatalf("bob joins spring: %d %s", st, body)
			}
			e.sees(t, "bob", e.bob, "/api/v1/cohorts", []string{`"slug":"spring"`, `"slug":"autumn"`}, []string{`"default"`})
			for _, c := range []struct{ cohort, sees, blind string }{{"autumn", e.inb, e.ina}, {"spring", e.ina, e.inb}} {
				id := e.submitIn(t, e.bob, c.cohort)
				if st, _ := e.get(t, c.sees, "/api/v1/submissions/"+id); st != http.StatusOK {
					t.Errorf("bob's %s submission to its instructor: %d", c.cohort, st)
				}
				if st, _ := e.get(t, c.blind, "/api/v1/submissions/"+id); st != http.StatusNotFound {
					t.Errorf("bob's %s submission to the other instructor: %d, want 404", c.cohort, st)
				}
			}
			// ada's standing shows her cohort's own deadline, not the
			// exercise's.
			spring, _ := e.db.CohortBySlug(context.Background(), "spring")
			due := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			if err := e.db.OfferExercise(context.Background(), domain.CohortExercise{CohortID: spring.ID, ExerciseID: "pol", Deadline: &due}); err != nil {
				t.Fatal(err)
			}
			e.sees(t, "ada", e.ada, "/api/v1/status", []string{`"deadline":"2026-05-01T00:00:00Z"`}, []string{"2026-03-01T12:00:00Z"})
			// A cohort bob is not in is ignored: his latest offering it.
			if id := e.submitIn(t, e.ada, "autumn"); true {
				if st, _ := e.get(t, e.inb, "/api/v1/submissions/"+id); st != http.StatusNotFound {
					t.Errorf("ada submitted into autumn, not hers: %d, want 404 to inb", st)
				}
			}
			e.sees(t, "ina", e.ina, "/api/v1/gradebook.csv", []string{"ada,pol", "bob,pol"}, []string{e.bobSub})
		})
	}
}

// submitIn uploads policyAnswer as token with the form field cohort and
// returns the submission's id.
func (e *cohortsEnv) submitIn(t *testing.T, token, cohort string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", "pol")
	_ = mw.WriteField("cohort", cohort)
	fw, _ := mw.CreateFormFile("notebook", "a.ipynb")
	_, _ = fw.Write([]byte(policyAnswer))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/api/v1/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	st, out := e.do(t, req)
	if st != http.StatusAccepted {
		t.Fatalf("submit in %s: %d %s", cohort, st, out)
	}
	return between(out, `"id":"`, `"`)
}

// TestCohortsFeedbackReleaseToTheirCohort: under feedback "on_release",
// an instructor's release to everyone reaches their cohort's learners
// only (it used to open every cohort's feedback); the admin's reaches
// every cohort; each instructor lists the releases of their cohorts.
func TestCohortsFeedbackReleaseToTheirCohort(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newCohortsEnvWith(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb",
				"deadline": "2026-03-01T12:00:00Z", "feedback": "on_release"}`)
			closed := "shown once your instructor releases"
			opened := func(who, token, sub string) bool {
				t.Helper()
				st, body := e.get(t, token, "/api/v1/submissions/"+sub)
				if st != http.StatusOK {
					t.Fatalf("%s reads their submission: %d %s", who, st, body)
				}
				return !strings.Contains(body, closed)
			}
			if opened("ada", e.ada, e.adaSub) || opened("bob", e.bob, e.bobSub) {
				t.Fatal("feedback is open before any release")
			}
			st, body := e.call(t, http.MethodPost, "/api/v1/exercises/pol/feedback/release", e.ina, `{}`)
			if st != http.StatusOK || !strings.Contains(body, `"cohort":"spring"`) {
				t.Fatalf("ina releases to everyone: %d %s", st, body)
			}
			if !opened("ada", e.ada, e.adaSub) || opened("bob", e.bob, e.bobSub) {
				t.Errorf("after ina's release: ada open %v, bob open %v; want only spring's ada", opened("ada", e.ada, e.adaSub), opened("bob", e.bob, e.bobSub))
			}
			e.sees(t, "inb", e.inb, "/api/v1/exercises/pol/feedback/releases", nil, []string{"spring"})
			e.sees(t, "ina", e.ina, "/api/v1/exercises/pol/feedback/releases", []string{`"cohort":"spring"`, `"released_by":"ina"`}, []string{`"released_at":"0001`})
			if st, body := e.call(t, http.MethodPost, "/api/v1/exercises/pol/feedback/release", e.admin, `{}`); st != http.StatusOK || strings.Contains(body, `"cohort"`) {
				t.Fatalf("the admin releases to everyone: %d %s", st, body)
			}
			if !opened("bob", e.bob, e.bobSub) {
				t.Error("the admin's release did not reach autumn")
			}
		})
	}
}
