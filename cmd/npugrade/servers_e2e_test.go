package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestTwoServersOnOnePostgres runs two `npugrade serve` processes on one
// Postgres, the supported way to scale out. A long poll on server B wakes
// when a submission arrives through server A (a Postgres notification,
// not B's 30 s safety-net re-query); a learner's upload limit (8 per 10
// minutes) counts uploads through both servers; with a runner process on each server,
// submissions sent through both are graded exactly once; a revocation
// counts on both servers, which keep token checks in memory.
func TestTwoServersOnOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks in runner processes")
	}
	t.Parallel()
	bin := buildBinary(t)
	dbURL := storetest.URL(t, "postgres")
	ada := addUser(t, dbURL, "ada", "learner")
	bob := addUser(t, dbURL, "bob", "learner")
	probe := addUser(t, dbURL, "probe", "runner")
	tokA := addUser(t, dbURL, "runner-a", "runner")
	tokB := addUser(t, dbURL, "runner-b", "runner")
	// Both servers run with the same limit, as a deployment would.
	a := runnerServer(t, dbURL, "--lease-ttl", "6s", "--upload-limit", "8/10m")
	t.Cleanup(a.stop)
	b := runnerServer(t, dbURL, "--lease-ttl", "6s", "--upload-limit", "8/10m")
	t.Cleanup(b.stop)
	db := openDB(t, dbURL)
	answer := readFile(t, runnerAnswers+"/rx/answer.ipynb")

	// 1. A long poll on B wakes for a submission made through A.
	var reg runnerproto.RegisterResponse
	if code := postJSON(t, b.url+"/api/runner/v1/register", probe, runnerproto.RegisterRequest{Name: "probe", Slots: 1, Report: cpuReport()}, &reg); code != 200 {
		t.Fatalf("register on B: %d", code)
	}
	type claimed struct {
		code  int
		lease domain.Lease
		at    time.Time
	}
	got := make(chan claimed, 1)
	go func() {
		var l domain.Lease
		code := postJSON(t, b.url+"/api/runner/v1/jobs/claim", probe, runnerproto.ClaimRequest{RunnerID: reg.RunnerID, WaitSeconds: 20}, &l)
		got <- claimed{code, l, time.Now()}
	}()
	time.Sleep(500 * time.Millisecond) // the poll is waiting on B
	sent := time.Now()
	if resp, sub := upload(t, a, ada, "rx", answer, ""); resp.StatusCode != 202 {
		t.Fatalf("submit through A: %d %v", resp.StatusCode, sub)
	}
	select {
	case c := <-got:
		woke := c.at.Sub(sent)
		t.Logf("the long poll on B got the job %v after the upload to A began", woke)
		if c.code != 200 || c.lease.JobID == 0 {
			t.Fatalf("the long poll on B answered %d %+v", c.code, c.lease)
		}
		if woke > 5*time.Second {
			t.Fatalf("the long poll on B woke after %v: not by notification", woke)
		}
		// Hand it back: the runner processes below grade it.
		if code := postJSON(t, fmt.Sprintf("%s/api/runner/v1/jobs/%d/release", b.url, c.lease.JobID), probe,
			runnerproto.LeaseRequest{LeaseToken: c.lease.Token}, nil); code != 204 {
			t.Fatalf("release: %d", code)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the long poll on B did not return")
	}

	// 2. The upload limit is one count across both servers.
	for i, s := range []*server{a, b, a, b, a, b, a, b} {
		if resp, sub := upload(t, s, bob, "rx", answer, fmt.Sprintf("k%d", i)); resp.StatusCode != 202 {
			t.Fatalf("bob's upload %d: %d %v", i+1, resp.StatusCode, sub)
		}
	}
	for _, s := range []*server{a, b} {
		if resp, _ := upload(t, s, bob, "rx", answer, "k-over"); resp.StatusCode != 429 {
			t.Fatalf("bob's ninth upload in the window through %s: %d, want 429", s.url, resp.StatusCode)
		}
	}

	// 3. A runner on each server; submissions through both; each graded once.
	startRunnerProc(t, bin, a.url, tokA, "ra", "--slots", "2")
	startRunnerProc(t, bin, b.url, tokB, "rb", "--slots", "2")
	for i := 0; i < 3; i++ {
		for _, s := range []*server{a, b} {
			if resp, sub := upload(t, s, ada, "rx", answer, ""); resp.StatusCode != 202 {
				t.Fatalf("submit: %d %v", resp.StatusCode, sub)
			}
		}
	}
	var subs []struct{ ID string }
	if err := db.RawScan(context.Background(), &subs, "SELECT id FROM submissions ORDER BY created_at"); err != nil {
		t.Fatal(err)
	}
	if len(subs) != 15 {
		t.Fatalf("%d submissions, want 15", len(subs))
	}
	for i, s := range subs {
		owner := ada
		if i >= 1 && i <= 8 {
			owner = bob
		}
		if sub := waitGraded(t, []*server{a, b}[i%2], owner, s.ID); sub["status"] != "graded" || sub["score"] != sub["max_score"] {
			t.Fatalf("submission %s: %v", s.ID, sub)
		}
	}
	byRunner := map[string]int{}
	for _, j := range jobRows(t, db) {
		if j.State != "succeeded" {
			t.Fatalf("job %d: %s (%s)", j.ID, j.State, j.LastError)
		}
		byRunner[strings.SplitN(j.RunnerID, "-", 2)[0]]++
	}
	var dup []struct {
		SubmissionID string
		N            int
	}
	if err := db.RawScan(context.Background(), &dup, "SELECT submission_id, COUNT(*) AS n FROM cell_results GROUP BY submission_id HAVING COUNT(*) <> 1"); err != nil {
		t.Fatal(err)
	}
	var scored int64
	_ = db.RawScan(context.Background(), &scored, "SELECT COUNT(DISTINCT submission_id) FROM cell_results")
	if len(dup) > 0 || scored != int64(len(subs)) {
		t.Fatalf("cell results: %d submissions scored (want %d), duplicates %v", scored, len(subs), dup)
	}
	t.Logf("%d submissions through two servers graded exactly once; jobs per runner: %v", len(subs), byRunner)

	// 4. Both servers keep ada's token check by now; a revocation by
	// another process (`npugrade user revoke`) reaches both by
	// notification. The wait is the notification's delivery.
	if code, _, errb := runCLI(t, "user", "revoke", "ada", "--db", dbURL); code != 0 {
		t.Fatalf("user revoke ada: exit %d: %s", code, errb)
	}
	revoked := time.Now()
	for _, s := range []*server{a, b} {
		for accepted := 0; ; accepted++ {
			resp, _ := request(t, "GET", s.url+"/api/v1/submissions", ada, nil, "", nil)
			if resp.StatusCode == 401 {
				t.Logf("%s refused the revoked token %v after the revocation (%d requests accepted before)", s.url, time.Since(revoked), accepted)
				break
			}
			if resp.StatusCode != 200 || time.Since(revoked) > 5*time.Second {
				t.Fatalf("%s answered %d to the revoked token %v after the revocation", s.url, resp.StatusCode, time.Since(revoked))
			}
			time.Sleep(time.Millisecond)
		}
	}
}
