package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

const hubAdminToken = "test-admin-token-0123456789abcdef"

// jupyterHub is a real JupyterHub (Debian's package) on loopback.
type jupyterHub struct {
	url  string // the hub's own address: its pages and API under /hub
	stop func()
}

// startJupyterHub runs jupyterhub with DummyAuthenticator (password
// "pw"), an admin service token for the test and npugrade's OAuth client
// (service-npugrade, redirect redirectURI). The proxy is a stand-in
// answering the proxy's REST API: the test talks to the hub directly, and
// no single-user server is ever spawned.
func startJupyterHub(t *testing.T, port int, redirectURI string) *jupyterHub {
	t.Helper()
	bin, err := exec.LookPath("jupyterhub")
	if err != nil {
		t.Skip("jupyterhub is not installed (Debian package jupyterhub): the JupyterHub sign-in tests need it")
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	dir := t.TempDir()
	hubURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := fmt.Sprintf(`
c.JupyterHub.bind_url = 'http://127.0.0.1:%d'
c.JupyterHub.hub_bind_url = %q
c.ConfigurableHTTPProxy.api_url = %q
c.ConfigurableHTTPProxy.should_start = False
c.ConfigurableHTTPProxy.auth_token = 'unused'
c.JupyterHub.authenticator_class = 'jupyterhub.auth.DummyAuthenticator'
c.DummyAuthenticator.password = 'pw'
c.JupyterHub.db_url = 'sqlite:///' + %q
c.JupyterHub.cookie_secret_file = %q
c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", "access:services!service=npugrade"]}, {"name": "tester", "scopes": ["admin:users", "admin:groups", "tokens"], "services": ["tester"]}]
c.JupyterHub.services = [
  {"name": "tester", "api_token": %q},
  {"name": "npugrade", "api_token": "npugrade-client-secret-0123456789", "oauth_client_id": "service-npugrade",
   "oauth_redirect_uri": %q, "oauth_no_confirm": True,
   "oauth_client_allowed_scopes": ["read:users:groups!user"]},
]
`, freePort(t), hubURL, proxy.URL, filepath.Join(dir, "hub.sqlite"), filepath.Join(dir, "cookie_secret"), hubAdminToken, redirectURI)
	if err := os.WriteFile(filepath.Join(dir, "jupyterhub_config.py"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logb bytes.Buffer
	cmd := exec.Command(bin, "-f", filepath.Join(dir, "jupyterhub_config.py"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h := &jupyterHub{url: hubURL}
	h.stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(func() { h.stop(); proxy.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(hubURL + "/hub/api/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		select {
		case <-done:
			t.Fatalf("jupyterhub exited:\n%s", logb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("jupyterhub did not start:\n%s", logb.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// admin calls the hub's REST API with the test's admin token.
func (h *jupyterHub) admin(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, h.url+"/hub/api"+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "token "+hubAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("hub %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("hub %s %s: %s %s", method, path, resp.Status, raw)
	}
	_ = json.Unmarshal(raw, &out)
	return out
}

// userToken creates hub user name (in group, when given) and returns an
// API token of theirs, as a single-user server's JUPYTERHUB_API_TOKEN.
func (h *jupyterHub) userToken(t *testing.T, name, group string) string {
	t.Helper()
	h.admin(t, http.MethodPost, "/users/"+name, nil)
	if group != "" {
		h.admin(t, http.MethodPost, "/groups/"+group, map[string]any{"users": []string{name}})
	}
	tok, _ := h.admin(t, http.MethodPost, "/users/"+name+"/tokens", map[string]any{"note": "single-user server"})["token"].(string)
	if tok == "" {
		t.Fatalf("no token for hub user %s", name)
	}
	return tok
}

// exchange posts a hub token to POST /api/v1/auth/jupyterhub.
func exchange(t *testing.T, base, hubToken string) (int, string, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"token": hubToken})
	resp, err := http.Post(base+"/api/v1/auth/jupyterhub", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header.Get("Content-Type"), out
}

// TestJupyterHubTokenExchange: a learner's JupyterHub API token is
// exchanged for an npugrade token that lists the exercises; the same hub
// user gets the same npugrade user again; a token the hub refuses is 401
// and a stopped hub 503, both problem+json.
func TestJupyterHubTokenExchange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JupyterHub")
	}
	t.Parallel()
	hub := startJupyterHub(t, freePort(t), "http://127.0.0.1:1/login/jupyterhub/callback")
	dbURL := storetest.URL(t, "sqlite")
	s := startServer(t, dbURL, "--local-runner", "0", "--jupyterhub-url", hub.url)
	defer s.stop()

	adaTok := hub.userToken(t, "ada", "")
	for range 2 {
		st, _, got := exchange(t, s.url, adaTok)
		tok, _ := got["access_token"].(string)
		if st != http.StatusOK || !strings.HasPrefix(tok, "npg_") || got["user"] != "ada" || got["scope"] != "learner" || got["token_type"] != "Bearer" {
			t.Fatalf("exchange: %d %v", st, got)
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.url+"/api/v1/exercises", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/v1/exercises with the exchanged token: %v %v", resp.Status, err)
		}
		resp.Body.Close()
	}
	// The notebook client in ada's single-user server: login() finds
	// JUPYTERHUB_API_TOKEN and exchanges it, with no code to approve.
	dir := t.TempDir()
	_, module := request(t, "GET", s.url+"/client/npugrade.py", "", nil, "", nil)
	if err := os.WriteFile(filepath.Join(dir, "npugrade.py"), module, 0o644); err != nil {
		t.Fatal(err)
	}
	py := exec.Command("/usr/bin/python3", "-c", "import npugrade; print('WHO', npugrade.login()); print('EXERCISES', len(npugrade.status()))")
	py.Dir = dir
	py.Env = append(cleanEnv(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "JUPYTERHUB_API_TOKEN="+adaTok)
	if out, err := py.CombinedOutput(); err != nil || !strings.Contains(string(out), "WHO ada\n") || strings.Contains(string(out), "EXERCISES 0") {
		t.Errorf("npugrade.login() under the hub: %v\n%s", err, out)
	}
	if st, ct, got := exchange(t, s.url, "not-a-hub-token"); st != http.StatusUnauthorized || ct != "application/problem+json" {
		t.Errorf("bad hub token: %d %s %v, want 401 problem+json", st, ct, got)
	}
	hub.stop()
	st, ct, got := exchange(t, s.url, adaTok)
	if st != http.StatusServiceUnavailable || ct != "application/problem+json" || !strings.Contains(fmt.Sprint(got["detail"]), "JupyterHub") {
		t.Errorf("hub stopped: %d %s %v, want 503 problem+json naming the hub", st, ct, got)
	}
}

// hubSignIn signs a browser (an HTTP client with a cookie jar) in to
// npugrade through the hub's login form and returns where it ends and
// the npugrade session cookie's presence.
func hubSignIn(t *testing.T, base, name string) (string, bool) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(base + "/login/jupyterhub?next=/exercises")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The hub shows its login form; its action keeps the OAuth request.
	login := resp.Request.URL
	if !strings.HasSuffix(login.Path, "/hub/login") {
		t.Fatalf("%s: not the hub's login page (%s)", name, resp.Request.URL)
	}
	resp, err = c.PostForm(login.String(), url.Values{"username": {name}, "password": {"pw"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: after the hub's form: %s at %s: %.300s", name, resp.Status, resp.Request.URL, body)
	}
	bu, _ := url.Parse(base)
	has := false
	for _, ck := range jar.Cookies(bu) {
		has = has || ck.Name == "npugrade_session"
	}
	return resp.Request.URL.Path, has
}

// TestJupyterHubWebSignIn: a learner and an instructor (the hub's
// instructors group) sign in to the pages through the hub's OAuth
// provider and land on their home pages; a replayed or unknown state is
// refused with the sign-in page.
func TestJupyterHubWebSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JupyterHub")
	}
	t.Parallel()
	hubPort := freePort(t)
	hubURL := fmt.Sprintf("http://127.0.0.1:%d", hubPort)
	dbURL := storetest.URL(t, "sqlite")
	s := startServer(t, dbURL, "--local-runner", "0", "--jupyterhub-url", hubURL,
		"--jupyterhub-client-id", "service-npugrade", "--jupyterhub-client-secret", "npugrade-client-secret-0123456789")
	defer s.stop()
	hub := startJupyterHub(t, hubPort, s.url+"/login/jupyterhub/callback")
	hub.userToken(t, "ada", "")
	hub.userToken(t, "teacher", "instructors")

	resp, err := http.Get(s.url + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `id="login-jupyterhub"`) {
		t.Errorf("the sign-in page offers no JupyterHub button")
	}
	if at, ok := hubSignIn(t, s.url, "ada"); at != "/exercises" || !ok {
		t.Errorf("learner through the hub: at %s, session %v; want /exercises with a session", at, ok)
	}
	if at, ok := hubSignIn(t, s.url, "teacher"); at != "/exercises" || !ok {
		t.Errorf("instructor through the hub: at %s, session %v", at, ok)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"user", "list", "--db", dbURL}, &out, &errb); code != 0 {
		t.Fatalf("user list: %s", errb.String())
	}
	for _, want := range []string{"ada\tlearner", "teacher\tinstructor"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("user list lacks %s:\n%s", want, out.String())
		}
	}
	resp, err = http.Get(s.url + "/login/jupyterhub/callback?state=forged&code=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged state: %s, want 401", resp.Status)
	}
}
