package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestHostPythonNeverGradesChapter: `serve --env host --local-runner 1`
// on Debian 12's Python (torch 1.13, no Dynamo) never grades a ch1
// answer, which requires torch ≥ 2.1: it stays queued, the learner sees
// what it waits for (in Chinese too), /metrics counts it; once a runner
// in the cpu grading environment registers, that runner grades it, 100 %.
func TestHostPythonNeverGradesChapter(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	envDir := envtest.RequireCPU(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			runnerTok := addUser(t, dbURL, "cpu-env-runner", "runner")
			s := startServer(t, dbURL, "--local-runner", "1", "--env", "host", "--metrics-token", "m-secret")
			defer s.stop()

			answer := readFile(t, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb"))
			_, sub := upload(t, s, ada, "ch1", answer, "")
			id := sub["id"].(string)
			// The host runner polls every few seconds at most: give it time to
			// (wrongly) take the job.
			time.Sleep(4 * time.Second)
			got := getSubmission(t, s, ada, id)
			if got["status"] != "queued" || !strings.Contains(got["waiting_for"].(string), "waiting for a runner with torch ≥ 2.1") {
				t.Fatalf("with only the host-Python runner: %v %q, want queued, waiting for torch ≥ 2.1", got["status"], got["waiting_for"])
			}
			_, zh := request(t, "GET", s.url+"/api/v1/submissions/"+id, ada, nil, "", map[string]string{"Accept-Language": "zh-CN"})
			if !strings.Contains(string(zh), "等待具备 torch ≥ 2.1") {
				t.Errorf("the Chinese reader is not told what it waits for: %s", zh)
			}
			_, metrics := request(t, "GET", s.url+"/metrics", "m-secret", nil, "", nil)
			if !strings.Contains(string(metrics), `npugrade_jobs_unclaimable{exercise="ch1",waiting_for="waiting for a runner with torch ≥ 2.1`) {
				t.Errorf("/metrics does not count the unclaimable job:\n%s", grepLines(string(metrics), "unclaimable"))
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"runner", "--server", s.url, "--token", runnerTok, "--slots", "1", "--name", "cpu-env", "--log-level", "warn",
					"--env", filepath.Base(envDir), "--envs-dir", filepath.Dir(envDir)}, io.Discard, os.Stderr)
			}()
			defer func() {
				cancel()
				select {
				case <-done:
				case <-time.After(60 * time.Second):
					t.Error("runner did not stop")
				}
			}()
			graded := waitGraded(t, s, ada, id)
			if graded["status"] != "graded" || graded["score"] != graded["max_score"] || graded["max_score"].(float64) < 5 {
				t.Fatalf("the cpu-environment runner graded %v/%v: %v", graded["score"], graded["max_score"], graded["message"])
			}
			if fp, _ := graded["env_fingerprint"].(string); fp == "" || fp == "local-cpu" {
				t.Fatalf("graded by the host-Python local runner (fingerprint %q)", fp)
			}
		})
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCheckRefusesWrongEnvironment: `check` on the host's Python refuses
// (exit 2) to execute a chapter that requires torch ≥ 2.1, naming what is
// missing and the fix, before executing anything.
func TestCheckRefusesWrongEnvironment(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"check", "--env", "host", "--only", "ch1",
		"--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers")}, &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "refusing to check in the host's Python") ||
		!strings.Contains(errb.String(), "ch1: needs torch >= 2.1") || !strings.Contains(errb.String(), "npugrade env build cpu") {
		t.Fatalf("check --env host of ch1: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if strings.Contains(out.String(), "answer") {
		t.Errorf("it executed notebooks before refusing:\n%s", out.String())
	}
}

// TestLocalRunnerSatisfiesNoExercise: the start line of a serve whose
// local runner's environment (Debian's torch 1.13) satisfies none of the
// chapters names the fix.
func TestLocalRunnerSatisfiesNoExercise(t *testing.T) {
	t.Parallel()
	cat, err := exercise.Load(filepath.Join(repoRoot, "exercises"), filepath.Join(repoRoot, "answers"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	host := cpuReport() // Debian 12's torch 1.13
	warnUnsatisfied(slog.New(slog.NewJSONHandler(&logs, nil)), cat, host)
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, logs.String())
	}
	msg, _ := line["msg"].(string)
	if !strings.Contains(msg, "satisfies no exercise") || !strings.Contains(msg, "npugrade env build cpu") ||
		line["exercises"] != "ch1,ch2,ch3,ch4,ch5" || !strings.Contains(line["why"].(string), "torch >= 2.1") {
		t.Errorf("start line: %s", logs.String())
	}
}
