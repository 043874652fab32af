package execution_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// sandboxedExecutor is an executor with the production sandbox defaults
// and its own short base and work directories.
func sandboxedExecutor(t *testing.T) *execution.Executor {
	t.Helper()
	cfg := sandbox.DefaultConfig()
	cfg.BaseDir = filepath.Join(shortTemp(t), "b")
	return &execution.Executor{Profile: "cpu", WorkRoot: shortTemp(t), Isolation: &cfg}
}

// codeNotebook is a notebook of plain code cells.
func codeNotebook(t *testing.T, sources ...string) []byte {
	t.Helper()
	var cells []map[string]any
	for i, s := range sources {
		cells = append(cells, map[string]any{"id": "c" + string(rune('a'+i)), "cell_type": "code", "metadata": map[string]any{},
			"execution_count": nil, "outputs": []any{}, "source": s})
	}
	b, err := json.Marshal(map[string]any{"nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{}, "cells": cells})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cellTexts(t *testing.T, executed []byte) []string {
	t.Helper()
	nb, err := notebook.Parse(executed, notebook.Limits{MaxBytes: 64 << 20, MaxOutputs: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range nb.Cells {
		if c.CellType == "code" {
			out = append(out, strings.TrimSpace(outputsText(c)))
		}
	}
	return out
}

// TestWarmPreloadLeavesNoNames: the preloaded module is in sys.modules
// (the learner's import is instant), yet a fresh cell's namespace, the
// execution counter and the history are exactly a cold kernel's.
func TestWarmPreloadLeavesNoNames(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	e := sandboxedExecutor(t)
	nb := codeNotebook(t,
		"print(sorted(dir()))",
		"import sys\nprint(len(In), len(Out), [k for k in ('_i1', '_1') if k in globals()])",
		"import time\nt = time.perf_counter()\nimport json\nprint('json' in sys.modules)",
	)
	opt := execution.Options{CellTimeout: 30 * time.Second, JobTimeout: 2 * time.Minute}
	cold, err := e.Execute(context.Background(), nb, opt)
	if err != nil {
		t.Fatalf("cold: %v\n%s", err, cold.Log)
	}
	w, err := e.Prestart(context.Background(), []string{"json", "no_such_module_npugrade"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	warm, err := w.Execute(context.Background(), nb, opt)
	if err != nil {
		t.Fatalf("warm: %v\n%s", err, warm.Log)
	}
	c, wt := cellTexts(t, cold.Notebook), cellTexts(t, warm.Notebook)
	if len(c) != 3 || strings.Join(c, "\n") != strings.Join(wt, "\n") {
		t.Errorf("warm outputs differ from cold:\ncold %q\nwarm %q", c, wt)
	}
	if strings.Contains(wt[0], "importlib") || strings.Contains(wt[0], "json") {
		t.Errorf("the preload left names in the learner's namespace: %s", wt[0])
	}
	// Execution counts start at 1 in both.
	for _, r := range []struct {
		name string
		nb   []byte
	}{{"cold", cold.Notebook}, {"warm", warm.Notebook}} {
		parsed, _ := notebook.Parse(r.nb, notebook.Limits{MaxBytes: 64 << 20})
		if n := parsed.Cells[0].ExecutionCount; n == nil || *n != 1 {
			t.Errorf("%s: first cell's execution count %v, want 1", r.name, n)
		}
	}
}

// TestWarmPreloadImports: with torch preloaded, the learner's import is
// already in sys.modules when the first cell runs.
func TestWarmPreloadImports(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	e := sandboxedExecutor(t)
	w, err := e.Prestart(context.Background(), []string{"torch"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nb := codeNotebook(t, "import sys, time\nprint('torch' in sys.modules)\nt = time.perf_counter()\nimport torch\nprint(time.perf_counter() - t < 0.2)\nprint([k for k in dir() if 'torch' in k])")
	res, err := w.Execute(context.Background(), nb, execution.Options{CellTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Log)
	}
	if got := cellTexts(t, res.Notebook)[0]; got != "True\nTrue\n['torch']" {
		t.Errorf("preloaded torch: got %q", got)
	}
}

// TestWarmStale: an environment whose driver died, whose runner
// configuration changed, or that was used once is refused without running
// anything; Close leaves nothing behind.
func TestWarmStale(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	nb := codeNotebook(t, "print('hi')")
	opt := execution.Options{CellTimeout: 10 * time.Second}
	for _, tc := range []struct {
		name  string
		spoil func(e *execution.Executor, w *execution.Warm)
	}{
		{"config-changed", func(e *execution.Executor, w *execution.Warm) { sandboxOf(e).MemoryLimit /= 2 }},
		{"profile-changed", func(e *execution.Executor, w *execution.Warm) { e.Profile = "npu-a2" }},
		{"driver-died", func(e *execution.Executor, w *execution.Warm) { w.Close() }},
		{"used-twice", func(e *execution.Executor, w *execution.Warm) {
			if _, err := w.Execute(context.Background(), nb, opt); err != nil {
				t.Errorf("first use: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := sandboxedExecutor(t)
			w, err := e.Prestart(context.Background(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.spoil(e, w)
			res, err := w.Execute(context.Background(), nb, opt)
			if !errors.Is(err, execution.ErrStale) || res.Notebook != nil {
				t.Errorf("stale environment: err %v, notebook %d bytes; want ErrStale and nothing run", err, len(res.Notebook))
			}
			w.Close()
			if entries, _ := os.ReadDir(e.WorkRoot); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
			if entries, _ := os.ReadDir(sandboxOf(e).BaseDir); len(entries) != 0 {
				t.Errorf("sandbox dirs left behind: %v", entries)
			}
		})
	}
}

// TestPoolReplaces: the pool replaces an environment that dies while
// waiting or outlives MaxAge, never hands out a stale one, and keeps one
// ready per slot.
func TestPoolReplaces(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	e := sandboxedExecutor(t)
	p := &execution.Pool{Exec: e, Size: 1, MaxAge: 4 * time.Second}
	p.Start(context.Background())
	defer p.Close()
	waitReady := func() {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for p.Ready() < 1 {
			if time.Now().After(deadline) {
				t.Fatal("no warm environment became ready")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitReady()
	first := kernelDirs(t, e.WorkRoot)
	// Past MaxAge the environment is replaced by a new one.
	time.Sleep(5 * time.Second)
	waitReady()
	if second := kernelDirs(t, e.WorkRoot); len(second) != 1 || second[0] == first[0] {
		t.Errorf("after MaxAge: environments %v, before %v; want one new", second, first)
	}
	// Kill the waiting driver: the pool notices and starts another.
	killDrivers(t, e.WorkRoot)
	time.Sleep(500 * time.Millisecond)
	waitReady()
	res, err := p.Execute(context.Background(), codeNotebook(t, "print(6*7)"), execution.Options{CellTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Log)
	}
	if got := cellTexts(t, res.Notebook); len(got) != 1 || got[0] != "42" {
		t.Errorf("outputs %q", got)
	}
	waitReady() // the next one is started at once
}

// kernelDirs lists the job directories under root.
func kernelDirs(t *testing.T, root string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(root, "npugrade-job-*"))
	return m
}

// killDrivers SIGKILLs the driver processes whose config lives under root.
func killDrivers(t *testing.T, root string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), root) || !strings.Contains(string(b), "--warm") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			p, _ := os.FindProcess(pid)
			_ = p.Kill()
			n++
		}
	}
	if n == 0 {
		t.Fatal("no warm driver found to kill")
	}
}

// TestWarmMatchesCold executes every chapter answer cold and warm (torch
// preloaded) and compares the normalised outputs of every graded cell.
func TestWarmMatchesCold(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		t.Fatal(err)
	}
	e := sandboxedExecutor(t)
	pool := &execution.Pool{Exec: e, Size: 1, Preload: []string{"torch"}}
	pool.Start(context.Background())
	defer pool.Close()
	for _, ex := range cat.List() {
		t.Run(ex.ID, func(t *testing.T) {
			rebuilt, _, err := notebook.RebuildSeeded(ex.Answer, ex.Answer.Clone(), ex.SeedFor("warm-vs-cold"))
			if err != nil {
				t.Fatal(err)
			}
			payload, err := notebook.Encode(rebuilt)
			if err != nil {
				t.Fatal(err)
			}
			opt := execution.Options{CellTimeout: time.Duration(ex.CellTimeout * float64(time.Second)), JobTimeout: 5 * time.Minute}
			cold, err := e.Execute(context.Background(), payload, opt)
			if err != nil {
				t.Fatalf("cold: %v\n%s", err, cold.Log)
			}
			warm, err := pool.Execute(context.Background(), payload, opt)
			if err != nil {
				t.Fatalf("warm: %v\n%s", err, warm.Log)
			}
			if cold.Killed || warm.Killed {
				t.Fatalf("killed: cold %q, warm %q", cold.Reason, warm.Reason)
			}
			cn := parseExecuted(t, cold.Notebook)
			wn := parseExecuted(t, warm.Notebook)
			compared := 0
			for _, gc := range ex.Graded {
				c, w := cn.CellByGraderID(gc.ID), wn.CellByGraderID(gc.ID)
				if c == nil || w == nil {
					t.Errorf("%s: cell missing (cold %v, warm %v)", gc.ID, c != nil, w != nil)
					continue
				}
				cj, _ := json.Marshal(compare.Normalize(c.Outputs))
				wj, _ := json.Marshal(compare.Normalize(w.Outputs))
				if string(cj) != string(wj) {
					t.Errorf("%s: warm outputs differ from cold:\ncold %s\nwarm %s", gc.ID, cj, wj)
				}
				compared++
			}
			t.Logf("%s: %d graded cells identical; cold %dms, warm %dms (after hand-over)", ex.ID, compared, cold.DurationMS, warm.DurationMS)
		})
	}
}

func parseExecuted(t *testing.T, b []byte) *notebook.Notebook {
	t.Helper()
	nb, err := notebook.Parse(b, notebook.Limits{MaxBytes: 64 << 20, MaxOutputs: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

// BenchmarkExecute times one chapter answer from hand-over to result:
// cold (driver, sandbox and kernel started for the job) against warm (a
// kernel pre-started with torch imported; its start is not timed). The
// difference is what a learner no longer waits for.
func BenchmarkExecute(b *testing.B) {
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"cold", "warm"} {
		for _, ex := range cat.List() {
			b.Run(mode+"/"+ex.ID, func(b *testing.B) {
				rebuilt, _, err := notebook.RebuildSeeded(ex.Answer, ex.Answer.Clone(), ex.SeedFor("bench"))
				if err != nil {
					b.Fatal(err)
				}
				payload, _ := notebook.Encode(rebuilt)
				cfg := sandbox.DefaultConfig()
				e := &execution.Executor{Profile: "cpu", Isolation: &cfg}
				opt := execution.Options{CellTimeout: time.Minute}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var w *execution.Warm
					if mode == "warm" {
						b.StopTimer()
						if w, err = e.Prestart(context.Background(), []string{"torch"}, nil); err != nil {
							b.Fatal(err)
						}
						time.Sleep(200 * time.Millisecond)
						b.StartTimer()
					}
					var res domain.ExecutionResult
					if w != nil {
						res, err = w.Execute(context.Background(), payload, opt)
					} else {
						res, err = e.Execute(context.Background(), payload, opt)
					}
					if err != nil || res.Killed {
						b.Fatalf("%v %s\n%s", err, res.Reason, res.Log)
					}
				}
			})
		}
	}
}

// TestPoolFallsBack: when the preload cannot work (torch does not fit in
// the memory limit) the job still runs, on the cold path, and the pool
// goes on pre-starting kernels without the preload.
func TestPoolFallsBack(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	e := sandboxedExecutor(t)
	sandboxOf(e).MemoryLimit = 128 << 20
	p := &execution.Pool{Exec: e, Size: 1, Preload: []string{"torch"}}
	p.Start(context.Background())
	defer p.Close()
	opt := execution.Options{CellTimeout: 20 * time.Second}
	for i := 0; i < 2; i++ {
		res, err := p.Execute(context.Background(), codeNotebook(t, "print(6*7)"), opt)
		if err != nil {
			t.Fatalf("job %d: %v\n%s", i, err, res.Log)
		}
		if got := cellTexts(t, res.Notebook); len(got) != 1 || got[0] != "42" {
			t.Errorf("job %d: outputs %q", i, got)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for p.Ready() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no environment became ready without the preload")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sandboxOf is the sandbox configuration e isolates its kernels with
// (a pointer: changing it changes the executor's).
func sandboxOf(e *execution.Executor) *sandbox.Config { return e.Isolation.(*sandbox.Config) }
