package sandbox

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const hostJupyter = "/usr/bin/jupyter"

func notebookJSON(t *testing.T, cells ...string) []byte {
	t.Helper()
	var cs []map[string]any
	for _, src := range cells {
		cs = append(cs, map[string]any{
			"cell_type": "code", "metadata": map[string]any{}, "source": src,
			"outputs": []any{}, "execution_count": nil,
		})
	}
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5, "cells": cs,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": "python3", "display_name": "Python 3", "language": "python"}},
	}
	b, err := json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cellTexts returns, per cell, its stream text plus error names/values.
func cellTexts(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			Outputs []struct {
				OutputType string          `json:"output_type"`
				Text       json.RawMessage `json:"text"`
				Ename      string          `json:"ename"`
				Evalue     string          `json:"evalue"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatal(err)
	}
	var res []string
	for _, c := range nb.Cells {
		var sb strings.Builder
		for _, o := range c.Outputs {
			var s string
			if json.Unmarshal(o.Text, &s) != nil {
				var ss []string
				_ = json.Unmarshal(o.Text, &ss)
				s = strings.Join(ss, "")
			}
			sb.WriteString(s)
			if o.Ename != "" {
				sb.WriteString(o.Ename + ": " + o.Evalue + "\n")
			}
		}
		res = append(res, sb.String())
	}
	return res
}

// TestNotebookEndToEnd runs a real notebook through nbconvert with the
// sandboxed kernel over IPC, as the executor does.
func TestNotebookEndToEnd(t *testing.T) {
	requireSandbox(t)
	if _, err := os.Stat(hostJupyter); err != nil {
		t.Skipf("%s not installed", hostJupyter)
	}
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	k, jobDir, _ := prepare(t, testConfig(t, nil))
	nbPath := filepath.Join(jobDir, "submission.ipynb")
	cells := []string{
		"import os, socket\nprint('PID', os.getpid(), 'UID', os.getuid(), 'CWD', os.getcwd())",
		"print('HOSTNAME', open('/etc/hostname').read().strip())",
		"s = socket.socket(); s.settimeout(2)\ntry:\n    s.connect(('127.0.0.1', " + itoa(port) + ")); print('NET-OPEN')\nexcept OSError as e:\n    print('NET-BLOCKED', e)",
		"try:\n    open(" + pyQuote(nbPath) + ").read(); print('NB-READABLE')\nexcept OSError as e:\n    print('NB-HIDDEN', type(e).__name__)",
		"print('ENV', sorted(k for k in os.environ if k.startswith(('NPUGRADE', 'JUPYTER', 'JPY'))))",
		"import time\nwhile True:\n    time.sleep(0.01)",
		"print('AFTER-INTERRUPT')",
	}
	if err := os.WriteFile(nbPath, notebookJSON(t, cells...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(jobDir, "out.ipynb")
	args := append([]string{"nbconvert", "--to", "notebook", "--execute", "--allow-errors",
		"--ExecutePreprocessor.timeout=2", "--ExecutePreprocessor.interrupt_on_timeout=True",
		"--output", out}, k.Args...)
	args = append(args, nbPath)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hostJupyter, args...)
	cmd.Dir = jobDir
	cmd.Env = append(append(os.Environ(), "NPUGRADE_TOKEN=host-secret-token"), k.Env...)
	start := time.Now()
	outb, err := cmd.CombinedOutput()
	t.Logf("nbconvert took %s", time.Since(start))
	if err != nil {
		t.Fatalf("nbconvert: %v\n%s", err, outb)
	}
	got := cellTexts(t, out)
	for i, g := range got {
		t.Logf("cell %d: %q", i, g)
	}
	want := []string{"PID 2 UID " + itoa(k.Limits.UID) + " CWD " + SandboxHome, "HOSTNAME " + sandboxHostname,
		"NET-BLOCKED", "NB-HIDDEN", "ENV []", "KeyboardInterrupt", "AFTER-INTERRUPT"}
	if len(got) != len(want) {
		t.Fatalf("got %d cells, want %d", len(got), len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("cell %d: got %q, want it to contain %q", i, got[i], want[i])
		}
	}
	select {
	case <-accepted:
		t.Error("host loopback listener received a connection from the sandbox")
	default:
	}
	// The kernel used IPC sockets in the job's ipc dir, not TCP.
	if !strings.Contains(strings.Join(k.Args, " "), "transport=ipc") {
		t.Error("Args do not select the ipc transport")
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if n := processesWithArg(k.ipcDir); n != 0 {
		t.Errorf("%d job processes remain after Close", n)
	}
	if st := k.Stats(); st.MemoryLimitHit || st.PidsLimitHit {
		t.Errorf("unexpected limit hit: %+v", st)
	}
}
