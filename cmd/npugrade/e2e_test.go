package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/httpapi/apitest"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

const repoRoot = "../.."

// server is a running `npugrade serve` started through run(), as the binary would be.
type server struct {
	url  string
	stop func()
}

func startServer(t *testing.T, dbURL string, extra ...string) *server {
	return startServerT(t, dbURL, extra...)
}

func startServerT(t testing.TB, dbURL string, extra ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dbURL,
		"--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers"),
		"--log-level", "warn"}, extra...)
	go func() {
		done <- run(ctx, args, pw, os.Stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("server did not start: %v (exit %d)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	url := strings.Fields(strings.TrimPrefix(line, "npugrade serving on "))[0]
	// Every client of the test (learners, remote runners) goes through a
	// proxy that checks each exchange against api/openapi.yaml.
	s := &server{url: apitest.Proxy(t, url)}
	s.stop = func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d", code)
			}
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	}
	return s
}

// addUser runs `npugrade user add` and returns the token from its last line.
func addUser(t *testing.T, dbURL, name, role string, flags ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"user", "add", name, "--role", role, "--db", dbURL}, flags...)
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("user add %s: exit %d: %s", name, code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	token := lines[len(lines)-1]
	if !strings.HasPrefix(token, "npg_") {
		t.Fatalf("last line of user add is not a token: %q", out.String())
	}
	return token
}

func request(t testing.TB, method, url, token string, body io.Reader, contentType string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func upload(t *testing.T, s *server, token, exercise string, nb []byte, key string) (*http.Response, map[string]any) {
	return uploadT(t, s, token, exercise, nb, key)
}

func uploadT(t testing.TB, s *server, token, exercise string, nb []byte, key string) (*http.Response, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if exercise != "" {
		mw.WriteField("exercise", exercise)
	}
	fw, _ := mw.CreateFormFile("notebook", "nb.ipynb")
	fw.Write(nb)
	mw.Close()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	resp, b := request(t, "POST", s.url+"/api/v1/submissions", token, &body, mw.FormDataContentType(), hdr)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp, out
}

func waitGraded(t *testing.T, s *server, token, id string) map[string]any {
	return waitGradedT(t, s, token, id)
}

func waitGradedT(t testing.TB, s *server, token, id string) map[string]any {
	t.Helper()
	sub, _ := pollSubmission(t, s, token, id, 3*time.Minute, 300*time.Millisecond, "graded", "needs-manual", "failed")
	return sub
}

// pollSubmission GETs submission id as token every `every` until its
// status is one of final, for at most within; it returns the submission
// and when that status was first seen.
func pollSubmission(t testing.TB, s *server, token, id string, within, every time.Duration, final ...string) (map[string]any, time.Time) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, b := request(t, "GET", s.url+"/api/v1/submissions/"+id, token, nil, "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET submission: %d %s", resp.StatusCode, b)
		}
		var sub map[string]any
		json.Unmarshal(b, &sub)
		if st, _ := sub["status"].(string); slices.Contains(final, st) {
			return sub, time.Now()
		}
		time.Sleep(every)
	}
	t.Fatalf("submission %s not graded in time", id)
	return nil, time.Time{}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEndToEnd drives the whole path through real HTTP, a real database
// and real nbconvert runs of the chapter 1 notebooks.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			bob := addUser(t, dbURL, "bob", "learner")
			teacher := addUser(t, dbURL, "teacher", "instructor")
			runnerTok := addUser(t, dbURL, "runner1", "runner")
			s := startServer(t, dbURL, "--local-runner", "1", "--metrics-token", "metrics-secret")

			// Authentication.
			if resp, _ := request(t, "GET", s.url+"/api/v1/exercises", "", nil, "", nil); resp.StatusCode != 401 {
				t.Fatalf("no token: %d", resp.StatusCode)
			}
			if resp, _ := request(t, "GET", s.url+"/api/v1/exercises", "npg_wrong", nil, "", nil); resp.StatusCode != 401 {
				t.Fatalf("bad token: %d", resp.StatusCode)
			}
			if resp, _ := request(t, "GET", s.url+"/api/v1/exercises", runnerTok, nil, "", nil); resp.StatusCode != 403 {
				t.Fatalf("runner token on a learner route: %d", resp.StatusCode)
			}
			resp, b := request(t, "GET", s.url+"/api/v1/exercises", ada, nil, "", nil)
			var exs []map[string]any
			json.Unmarshal(b, &exs)
			if resp.StatusCode != 200 || len(exs) < 1 || exs[0]["id"] != "ch1" || exs[0]["max_points"].(float64) <= 0 {
				t.Fatalf("exercises: %d %s", resp.StatusCode, b)
			}

			// The starter download is generated from the answer and holds no solutions.
			resp, starter := request(t, "GET", s.url+"/api/v1/exercises/ch1/notebook", ada, nil, "", nil)
			if resp.StatusCode != 200 || !bytes.Contains(starter, []byte("YOUR CODE HERE")) && !bytes.Contains(starter, []byte("None")) {
				t.Fatalf("starter: %d", resp.StatusCode)
			}
			answer := readFile(t, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb"))
			if bytes.Equal(starter, answer) {
				t.Fatal("the starter is the answer")
			}

			// Upload the answer (with an idempotency key) and the untouched starter.
			resp, sub := upload(t, s, ada, "ch1", answer, "k-1")
			if resp.StatusCode != 202 || sub["status"] != "queued" || sub["id"] == "" {
				t.Fatalf("upload answer: %d %v", resp.StatusCode, sub)
			}
			answerID := sub["id"].(string)
			resp, again := upload(t, s, ada, "ch1", answer, "k-1")
			if resp.StatusCode != 202 || again["id"] != answerID {
				t.Fatalf("idempotent retry gave %v, want %s", again["id"], answerID)
			}
			resp, sub = upload(t, s, ada, "ch1", starter, "")
			if resp.StatusCode != 202 {
				t.Fatalf("upload starter: %d %v", resp.StatusCode, sub)
			}
			starterID := sub["id"].(string)

			graded := waitGraded(t, s, ada, answerID)
			if graded["status"] != "graded" || graded["score"] != graded["max_score"] || graded["max_score"].(float64) < 5 {
				t.Fatalf("answer graded %v/%v: %v", graded["score"], graded["max_score"], graded)
			}
			cells := graded["cells"].([]any)
			if len(cells) < 5 {
				t.Fatalf("only %d graded cells", len(cells))
			}
			for _, c := range cells {
				cell := c.(map[string]any)
				for _, k := range []string{"id", "verdict", "points", "max_points", "message"} {
					if _, ok := cell[k]; !ok {
						t.Fatalf("cell lacks %q: %v", k, cell)
					}
				}
			}
			gs := waitGraded(t, s, ada, starterID)
			if gs["status"] != "graded" || gs["score"].(float64) >= gs["max_score"].(float64) {
				t.Fatalf("starter scored %v/%v", gs["score"], gs["max_score"])
			}

			// Another learner cannot read it; an instructor can.
			if resp, _ := request(t, "GET", s.url+"/api/v1/submissions/"+answerID, bob, nil, "", nil); resp.StatusCode != 404 && resp.StatusCode != 403 {
				t.Fatalf("bob read ada's submission: %d", resp.StatusCode)
			}
			if resp, _ := request(t, "GET", s.url+"/api/v1/submissions/"+answerID, teacher, nil, "", nil); resp.StatusCode != 200 {
				t.Fatalf("instructor: %d", resp.StatusCode)
			}

			// Bad uploads: problem+json listing every problem.
			resp, p := upload(t, s, ada, "ch9", []byte(`{"nbformat": 3, "cells": []}`), "")
			if resp.StatusCode != 422 || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("bad upload: %d %s %v", resp.StatusCode, resp.Header.Get("Content-Type"), p)
			}
			if probs, _ := p["problems"].([]any); len(probs) < 2 {
				t.Fatalf("want both problems (unknown exercise, nbformat 3), got %v", p)
			}
			resp, p = upload(t, s, ada, "ch1", []byte("not json"), "")
			if resp.StatusCode != 422 {
				t.Fatalf("not json: %d %v", resp.StatusCode, p)
			}
			big := bytes.Repeat([]byte(" "), 9<<20)
			if resp, _ := upload(t, s, ada, "ch1", big, ""); resp.StatusCode != 413 {
				t.Fatalf("oversized upload: %d", resp.StatusCode)
			}

			// The CLI: uploads, waits, prints the table, exits 0 on full marks.
			path := filepath.Join(t.TempDir(), "answer.ipynb")
			os.WriteFile(path, answer, 0o644)
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"submit", "--server", s.url, "--token", ada, "--exercise", "ch1", path}, &out, &errb)
			if code != 0 || !strings.Contains(out.String(), "VERDICT") || !strings.Contains(out.String(), "pass") {
				t.Fatalf("submit exit %d:\n%s\n%s", code, out.String(), errb.String())
			}

			for _, ep := range []string{"/healthz", "/readyz"} {
				if resp, b := request(t, "GET", s.url+ep, "", nil, "", nil); resp.StatusCode != 200 {
					t.Fatalf("%s: %d %s", ep, resp.StatusCode, b)
				}
			}
			// /metrics is not public: it needs the metrics token.
			for _, tok := range []string{"", ada} {
				if resp, _ := request(t, "GET", s.url+"/metrics", tok, nil, "", nil); resp.StatusCode != 401 {
					t.Fatalf("/metrics with token %q: %d, want 401", tok, resp.StatusCode)
				}
			}
			_, metrics := request(t, "GET", s.url+"/metrics", "metrics-secret", nil, "", nil)
			if !bytes.Contains(metrics, []byte("npugrade_graded_total")) {
				t.Fatal("metrics lack npugrade_graded_total")
			}

			// A restarted server still has the submission.
			s.stop()
			s2 := startServer(t, dbURL, "--local-runner", "0")
			defer s2.stop()
			resp, b = request(t, "GET", s2.url+"/api/v1/submissions/"+answerID, ada, nil, "", nil)
			var after map[string]any
			json.Unmarshal(b, &after)
			if resp.StatusCode != 200 || after["status"] != "graded" || after["score"] != graded["score"] {
				t.Fatalf("after restart: %d %s", resp.StatusCode, b)
			}
			if fmt.Sprint(len(after["cells"].([]any))) != fmt.Sprint(len(cells)) {
				t.Fatal("cells lost across restart")
			}
		})
	}
}
