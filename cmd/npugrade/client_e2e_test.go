package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestNotebookClientChecksAndSubmits is a learner in Jupyter: a real
// kernel (nbconvert on the host's Python) runs a notebook that imports
// npugrade.py as served by a real server (GET /client/npugrade.py), checks
// ch1's starter (failing questions shown, no attempt used), submits the
// answer (100 %, counted, attempts left shown) and reads its status; the
// ch1 jobs run in the real cpu grading environment. Then the API confirms
// what the learner saw: one submission, one attempt, the checks apart.
func TestNotebookClientChecksAndSubmits(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	requireSandboxExec(t)
	if err := exec.Command("/usr/bin/python3", "-c", "import nbconvert, nbclient, ipykernel").Run(); err != nil {
		t.Skip("the host's Python has no nbconvert/ipykernel (scripts/deps.sh installs them)")
	}
	dbURL := storetest.URL(t, storetest.Dialects(t)[len(storetest.Dialects(t))-1]) // Postgres when there is one
	ada := addUser(t, dbURL, "ada", "learner")
	s := startServer(t, dbURL, "--local-runner", "1")
	defer s.stop()

	dir := t.TempDir()
	resp, module := request(t, "GET", s.url+"/client/npugrade.py", "", nil, "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(module), "_SERVED_BY = \""+s.url+"\"") {
		t.Fatalf("client module: %d, served-by line missing (%d bytes)", resp.StatusCode, len(module))
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("npugrade.py", module)
	_, starter := request(t, "GET", s.url+"/api/v1/exercises/ch1/notebook", ada, nil, "", nil)
	write("01.05_chapter_practice.ipynb", starter)
	write("01.05_chapter_practice_answer.ipynb", readFile(t, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")))
	write("learner.ipynb", learnerNotebook(t,
		// The module knows its server: only the token is configured.
		"import json, npugrade\nnpugrade.configure(token="+quote(ada)+")\nprint('SERVER', npugrade._server())",
		"r = npugrade.check(notebook='01.05_chapter_practice.ipynb', timeout=240)\n"+
			"print('CHECK', json.dumps({'kind': r.kind, 'score': r.score, 'max': r.max_score, 'failing': r.failing(), 'cells': len(r.cells)}))",
		"q = npugrade.check(question=13, notebook='01.05_chapter_practice.ipynb', timeout=240)\n"+
			"print('ONE', json.dumps({'ids': [c['id'] for c in q.cells], 'text': repr(q)}))",
		"s = npugrade.submit(notebook='01.05_chapter_practice_answer.ipynb', timeout=240)\n"+
			"print('SUBMIT', json.dumps({'kind': s.kind, 'score': s.score, 'max': s.max_score, 'status': s.status}))",
		"st = npugrade.status()\nprint('STATUS', json.dumps([x for x in st if x['exercise'] == 'ch1']))",
		"try:\n    npugrade.check(notebook='no-such.ipynb')\nexcept npugrade.NpugradeError as e:\n    print('ERROR', e)",
	))
	cmd := exec.Command("/usr/bin/python3", "-m", "nbconvert", "--to", "notebook", "--execute", "learner.ipynb",
		"--output", "executed.ipynb", "--ExecutePreprocessor.timeout=600")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nbconvert: %v\n%s", err, out)
	}
	lines, html := executedOutputs(t, filepath.Join(dir, "executed.ipynb"))
	got := func(tag string, v any) {
		t.Helper()
		l, ok := lines[tag]
		if !ok {
			t.Fatalf("the notebook printed no %s line; printed %v", tag, lines)
		}
		if err := json.Unmarshal([]byte(l), v); err != nil {
			t.Fatalf("%s %s: %v", tag, l, err)
		}
	}
	if lines["SERVER"] != s.url {
		t.Errorf("the served module's server = %q, want %q", lines["SERVER"], s.url)
	}
	var chk struct {
		Kind       string
		Score, Max float64
		Failing    []string
		Cells      int
	}
	got("CHECK", &chk)
	if chk.Kind != "check" || chk.Max <= 0 || chk.Score >= chk.Max || len(chk.Failing) == 0 || chk.Cells == 0 {
		t.Errorf("check of the starter = %+v, want a check with failing questions", chk)
	}
	// A question is asked for by its number and shown as the notebook
	// numbers it, its hidden test with it.
	var one struct {
		IDs  []string
		Text string
	}
	got("ONE", &one)
	if strings.Join(one.IDs, ",") != "q13,q13-probe" || !strings.Contains(one.Text, "第 13 题 隐藏测试") || strings.Contains(one.Text, "q13-probe") {
		t.Errorf("check(question=13) showed %+v", one)
	}
	var sub struct {
		Kind, Status string
		Score, Max   float64
	}
	got("SUBMIT", &sub)
	if sub.Kind != "submission" || sub.Status != "graded" || sub.Max <= 0 || sub.Score != sub.Max {
		t.Errorf("submit of the answer = %+v, want graded at 100%%", sub)
	}
	var st []map[string]any
	got("STATUS", &st)
	if len(st) != 1 || st[0]["attempts"].(float64) != 1 || st[0]["score"].(float64) != sub.Max {
		t.Errorf("status of ch1 = %v, want one attempt counting %g", st, sub.Max)
	}
	if e := lines["ERROR"]; !strings.Contains(e, "no-such.ipynb") || strings.Contains(e, "Traceback") {
		t.Errorf("a missing notebook's error = %q, want one sentence naming it", e)
	}
	if !strings.Contains(html, "<table>") || !strings.Contains(html, "检查（不计次数）") || !strings.Contains(html, "剩余次数") {
		t.Errorf("Jupyter showed no result table (HTML outputs: %.300s)", html)
	}

	// pip installs the same client from the server's simple index.
	target := filepath.Join(dir, "site")
	pip := exec.Command("/usr/bin/python3", "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check",
		"--target", target, "--index-url", s.url+"/client/simple", "npugrade")
	pip.Env = cleanEnv()
	if out, err := pip.CombinedOutput(); err != nil {
		t.Errorf("pip install from %s/client/simple: %v\n%s", s.url, err, out)
	} else if out, err := exec.Command("/usr/bin/python3", "-c", "import sys; sys.path.insert(0, "+quote(target)+
		"); import npugrade; print(npugrade._SERVED_BY, npugrade.__version__)").CombinedOutput(); err != nil ||
		!strings.HasPrefix(string(out), s.url+" ") {
		t.Errorf("the pip-installed client: %v %s", err, out)
	}

	// What the server kept: the answer's submission alone counts.
	_, b := request(t, "GET", s.url+"/api/v1/submissions?exercise=ch1", ada, nil, "", nil)
	var subs []map[string]any
	json.Unmarshal(b, &subs)
	if len(subs) != 1 || subs[0]["kind"] != "submission" {
		t.Errorf("ada's submissions = %s, want the one submission", b)
	}
	_, b = request(t, "GET", s.url+"/api/v1/checks?exercise=ch1", ada, nil, "", nil)
	var checks []map[string]any
	json.Unmarshal(b, &checks)
	if len(checks) != 2 {
		t.Errorf("ada's checks = %d, want 2: %s", len(checks), b)
	}
	_, b = request(t, "GET", s.url+"/api/v1/exercises/ch1/score", ada, nil, "", nil)
	var score map[string]any
	json.Unmarshal(b, &score)
	if score["attempts"] != 1.0 || score["score"] != sub.Max {
		t.Errorf("ch1 score = %s, want 1 attempt at %g", b, sub.Max)
	}
}

// learnerNotebook is a notebook of code cells.
func learnerNotebook(t *testing.T, sources ...string) []byte {
	t.Helper()
	cells := make([]map[string]any, len(sources))
	for i, src := range sources {
		cells[i] = map[string]any{"cell_type": "code", "metadata": map[string]any{}, "source": src, "outputs": []any{}, "execution_count": nil}
	}
	b, err := json.Marshal(map[string]any{"nbformat": 4, "nbformat_minor": 5, "cells": cells,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": "python3", "display_name": "Python 3", "language": "python"}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// executedOutputs reads an executed notebook's printed "TAG rest" lines
// (by tag) and its HTML outputs.
func executedOutputs(t *testing.T, path string) (map[string]string, string) {
	t.Helper()
	var nb struct {
		Cells []struct {
			Outputs []struct {
				Name string
				Text any
				Data map[string]any
			}
		}
	}
	if err := json.Unmarshal(readFile(t, path), &nb); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	var html strings.Builder
	for _, c := range nb.Cells {
		for _, o := range c.Outputs {
			sc := bufio.NewScanner(strings.NewReader(joinText(o.Text)))
			for sc.Scan() {
				if tag, rest, ok := strings.Cut(sc.Text(), " "); ok && tag == strings.ToUpper(tag) && tag != "" {
					lines[tag] = rest
				}
			}
			html.WriteString(joinText(o.Data["text/html"]))
		}
	}
	return lines, html.String()
}

func joinText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var b strings.Builder
		for _, s := range x {
			str, _ := s.(string)
			b.WriteString(str)
		}
		return b.String()
	}
	return ""
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// cleanEnv is the test's environment without npugrade's own variables,
// so the notebook's client finds its server and token the learner's way.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NPUGRADE_") && !strings.HasPrefix(kv, "JUPYTERHUB_") && !strings.HasPrefix(kv, "JPY_") {
			out = append(out, kv)
		}
	}
	return out
}
