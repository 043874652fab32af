package main

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/lti"
	"github.com/npugrade/npugrade/internal/lti/ltitest"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
)

// freeAddr is a loopback address with a free port (serve's --public-url
// must be known before it starts).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// launchIn starts a launch of claims in the browser the way an LMS does:
// the login initiation, the platform's auto-posting form, the tool's
// redirect; it waits for the signed-in page.
func launchIn(b *tab, plat *ltitest.Platform, tool string, claims map[string]any) {
	b.t.Helper()
	plat.SetNext(claims)
	q := url.Values{"iss": {plat.Issuer}, "login_hint": {claims["sub"].(string)}, "target_link_uri": {tool + "/lti/launch"},
		"client_id": {plat.ClientID}, "lti_deployment_id": {plat.DeploymentID}}
	b.do("launch", chromedp.Navigate(tool+"/lti/login?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS("header .who")))
}

// TestWebLTILaunchAndDeepLink: `npugrade serve --public-url` with a
// registered platform serves the LTI tool. In Chromium, an instructor's
// launch from the test platform opens ch1 signed in; a learner's too; the
// learner's graded submission reaches the platform's AGS service through
// serve's own deliverer and sender; the instructor's Deep Linking launch
// shows the exercises, and the choice posts itself back to the platform
// (app.js; the page's CSP lets its form go there).
func TestWebLTILaunchAndDeepLink(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "lti.db")
	plat := ltitest.New(t)
	addr := freeAddr(t)
	tool := "http://" + addr
	plat.ToolJWKS = tool + "/lti/jwks"
	r := plat.Registration()
	if code, _, stderr := runCLI(t, "lti", "platform", "add", "--db", dbURL, "--issuer", r.Issuer, "--client-id", r.ClientID,
		"--deployment-id", r.DeploymentIDs[0], "--auth-url", r.AuthLoginURL, "--token-url", r.TokenURL, "--jwks-url", r.JWKSURL); code != exitOK {
		t.Fatalf("platform add: %s", stderr)
	}
	s := startServer(t, dbURL, "--addr", addr, "--public-url", tool, "--local-runner", "0")
	defer s.stop()

	teacher := newTab(t, tool)
	launchIn(teacher, plat, tool, plat.ResourceLink("t-1", "course-1", "ch1", ltitest.Instructor))
	if loc := teacher.location(); loc != "/exercises/ch1" {
		t.Fatalf("instructor launch landed on %s", loc)
	}
	teacher.shot("instructor-launch")
	learner := newTab(t, tool)
	launchIn(learner, plat, tool, plat.ResourceLink("s-1", "course-1", "ch1", ltitest.Learner))
	if loc := learner.location(); loc != "/exercises/ch1" || !strings.Contains(learner.text("header .who"), "s-1@example.edu") {
		t.Fatalf("learner launch landed on %s as %q", loc, learner.text("header .who"))
	}
	learner.shot("learner-launch")

	seedCohortGrade(t, dbURL, "s-1@example.edu")
	deadline := time.Now().Add(30 * time.Second)
	for len(plat.Scores()) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if sc := plat.Scores(); len(sc) != 1 || sc[0].UserID != "s-1" || sc[0].ScoreGiven != 1 || sc[0].GradingProgress != lti.FullyGraded {
		t.Fatalf("scores at the platform: %+v (refused: %v)", sc, plat.Refusals())
	}

	dl := plat.ResourceLink("t-1", "course-1", "", ltitest.Instructor)
	dl[lti.ClaimMessageType] = lti.MessageDeepLinking
	delete(dl, lti.ClaimResourceLink)
	dl[lti.ClaimDLSettings] = map[string]any{"deep_link_return_url": plat.DeepLinkReturnURL(), "accept_types": []string{"ltiResourceLink"}, "accept_multiple": true}
	launchIn(teacher, plat, tool, dl)
	if loc := teacher.location(); !strings.HasPrefix(loc, "/lti/deep-link?k=") {
		t.Fatalf("deep linking launch landed on %s", loc)
	}
	teacher.shot("deep-link-choice")
	teacher.do("choose ch1", chromedp.Click(chromedp.CSS(`input[value="ch1"]`)), chromedp.Submit(chromedp.CSS(`input[value="ch1"]`)))
	for len(plat.DeepLinked()) == 0 && time.Now().Before(deadline.Add(30*time.Second)) {
		time.Sleep(200 * time.Millisecond)
	}
	linked := plat.DeepLinked()
	if len(linked) != 1 {
		t.Fatalf("the platform got %d deep link responses (refused: %v)", len(linked), plat.Refusals())
	}
	items, _ := linked[0][lti.ClaimDLItems].([]any)
	if len(items) != 1 || items[0].(map[string]any)["custom"].(map[string]any)["exercise"] != "ch1" {
		t.Errorf("content items: %v", items)
	}
}

// seedCohortGrade stores a full-marks graded submission of ch1 by
// learner in their LTI cohort, as a runner's completion would.
func seedCohortGrade(t *testing.T, dbURL, learner string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := db.UserByName(ctx, learner)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := db.CohortsOf(ctx, u.ID)
	var cohort int64
	for _, m := range ms {
		if strings.HasPrefix(m.Cohort.Slug, "lti-") {
			cohort = m.Cohort.ID
		}
	}
	if err != nil || cohort == 0 {
		t.Fatalf("%s has no LTI cohort: %+v %v", learner, ms, err)
	}
	answer := []byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}`)
	sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "test", CohortID: cohort,
		Upload: answer, Rebuilt: answer, Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	g := store.Grade{SubmissionID: sub.ID, Score: 1, MaxScore: 1, Profile: "cpu", RunnerID: "test",
		Cells: []domain.CellResult{{CellID: "q1", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true}}}
	g.Status = scoring.Status(g.Cells)
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.SaveGrade(g) }); err != nil {
		t.Fatal(err)
	}
}
