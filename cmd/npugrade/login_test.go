package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestCLILogin: npugrade login against a real server prints the code
// and URL (zh-CN and en), the test approves it over HTTP as a signed-in
// learner, and login saves a working learner token with the server in
// the config file, mode 0600; submit's token then defaults to it.
func TestCLILogin(t *testing.T) {
	dbURL := storetest.URL(t, "sqlite")
	ada := addUser(t, dbURL, "ada", "learner")
	s := startServer(t, dbURL)
	defer s.stop()
	cfgDir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgDir)
	t.Setenv("NPUGRADE_SERVER", "")

	pr, pw := io.Pipe()
	var errb strings.Builder
	done := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { done <- run(ctx, []string{"login", "--server", s.url}, pw, &errb); pw.Close() }()
	sc := bufio.NewScanner(pr)
	var printed []string
	complete := ""
	for complete == "" && sc.Scan() {
		line := sc.Text()
		printed = append(printed, line)
		if i := strings.Index(line, s.url+"/device?code="); i >= 0 && strings.HasPrefix(line, "  (or open ") {
			complete = strings.TrimSuffix(line[i:], ")")
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	all := strings.Join(printed, "\n")
	if complete == "" || !strings.Contains(all, "请在浏览器中打开") || !strings.Contains(all, "enter the code") {
		t.Fatalf("login printed:\n%s\nstderr: %s", all, errb.String())
	}
	approveDevice(t, s.url, ada, complete)
	select {
	case rc := <-done:
		if rc != 0 {
			t.Fatalf("login exit %d: %s", rc, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("login did not finish within 30 s of the approval")
	}
	p := filepath.Join(cfgDir, "npugrade", "config.json")
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config %s: %v %v", p, fi, err)
	}
	var cfg cliConfig
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Server != s.url || !strings.HasPrefix(cfg.Token, "npg_") {
		t.Fatalf("config = %s, %v", b, err)
	}
	req, _ := http.NewRequest("GET", s.url+"/api/v1/exercises", nil)
	req.Header.Set("Authorization", "Bearer "+cfg.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exercises with the saved token: %d", resp.StatusCode)
	}
	// submit takes the saved server and token: without them it would
	// refuse the command line; with them it reaches the server (which
	// answers that the exercise does not exist).
	t.Setenv("NPUGRADE_TOKEN", "")
	nb := filepath.Join(t.TempDir(), "x.ipynb")
	_ = os.WriteFile(nb, []byte(`{"cells":[],"metadata":{},"nbformat":4,"nbformat_minor":5}`), 0o600)
	var out, serr strings.Builder
	rc := run(ctx, []string{"submit", "--exercise", "nosuch", "--wait", "1s", nb}, &out, &serr)
	if strings.Contains(serr.String(), "is required") || strings.Contains(serr.String(), "401") {
		t.Fatalf("submit with the saved token: exit %d: %s", rc, serr.String())
	}
}

// approveDevice approves the device sign-in at complete (its
// verification_uri_complete) as the learner signed in with token, through
// the /device page and its form.
func approveDevice(t *testing.T, base, token, complete string) {
	t.Helper()
	web := signedIn(t, base, token)
	resp, err := web.Get(complete)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, rest, _ := strings.Cut(string(page), `name="csrf" value="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	code := complete[strings.Index(complete, "code=")+len("code="):]
	resp, err = web.PostForm(base+"/device", url.Values{"csrf": {csrf}, "code": {code}, "decision": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
}
