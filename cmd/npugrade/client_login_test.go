package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestNotebookClientLogin: npugrade.login() in the served module runs the
// device flow against a real server: it shows the code and URL, the test
// approves it as the signed-in learner, and the client saves a learner
// token (mode 0600) that status() then uses. Once the learner revokes it
// (DELETE /api/v1/tokens/{id}), the client answers one sentence telling
// them to sign in again, not a traceback.
func TestNotebookClientLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python")
	}
	t.Parallel()
	dbURL := storetest.URL(t, storetest.Dialects(t)[len(storetest.Dialects(t))-1])
	ada := addUser(t, dbURL, "ada", "learner")
	s := startServer(t, dbURL)
	defer s.stop()
	dir := t.TempDir()
	_, module := request(t, "GET", s.url+"/client/npugrade.py", "", nil, "", nil)
	if err := os.WriteFile(filepath.Join(dir, "npugrade.py"), module, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	py := exec.CommandContext(ctx, "/usr/bin/python3", "-u", "-c", `import npugrade, json
who = npugrade.login()
print("WHO", who)
print("STATUS", len(npugrade.status()))
input()  # the test revokes the token meanwhile
try:
    npugrade.status()
except npugrade.NpugradeError as e:
    print("REVOKED", e)
`)
	py.Dir = dir
	py.Env = append(cleanEnv(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"))
	stdin, _ := py.StdinPipe()
	stdout, _ := py.StdoutPipe()
	py.Stderr = os.Stderr
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	next := func(tag string) string {
		t.Helper()
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), tag); ok {
				return strings.TrimSpace(rest)
			}
		}
		t.Fatalf("the client printed no %q line", tag)
		return ""
	}
	shown := next("Open ")
	complete := regexp.MustCompile(`\S+/device\?code=[A-Z-]+`).FindString(shown)
	if complete == "" || !strings.HasPrefix(complete, s.url) {
		t.Fatalf("login showed %q, want %s/device?code=...", shown, s.url)
	}
	approveDevice(t, s.url, ada, complete)
	if who := next("WHO"); who != "ada" {
		t.Fatalf("signed in as %q", who)
	}
	if n := next("STATUS"); n == "0" {
		t.Fatalf("status with the new token listed %s exercises", n)
	}
	cfgPath := filepath.Join(dir, ".config", "npugrade", "config.json")
	fi, err := os.Stat(cfgPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved config: %v %v", fi, err)
	}
	var cfg struct{ Server, Token string }
	b, _ := os.ReadFile(cfgPath)
	if json.Unmarshal(b, &cfg) != nil || cfg.Server != s.url || !strings.HasPrefix(cfg.Token, "npg_") {
		t.Fatalf("saved config = %s", b)
	}
	_, list := request(t, "GET", s.url+"/api/v1/tokens", cfg.Token, nil, "", nil)
	var toks struct {
		Tokens []struct {
			ID    int64
			Scope string
		}
	}
	_ = json.Unmarshal(list, &toks)
	var revoked bool
	for _, tk := range toks.Tokens {
		if tk.Scope == "learner" {
			resp, _ := request(t, "DELETE", s.url+"/api/v1/tokens/"+jsonNum(tk.ID), cfg.Token, nil, "", nil)
			revoked = resp.StatusCode == http.StatusNoContent
		}
	}
	if !revoked {
		t.Fatalf("no learner-scoped token to revoke in %s", list)
	}
	_, _ = io.WriteString(stdin, "\n")
	if msg := next("REVOKED"); !strings.Contains(msg, "npugrade.login()") || strings.Contains(msg, "Traceback") {
		t.Errorf("a revoked token's error = %q, want one sentence asking to sign in again", msg)
	}
	_ = py.Wait()
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }
