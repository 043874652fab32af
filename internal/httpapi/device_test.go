package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi/apitest"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestDeviceFlowOverHTTP: the whole device-code sign-in over real HTTP,
// checked against api/openapi.yaml: a code, pending, slow_down, the
// learner's approval on the /device page (session and CSRF), the token
// issued once (then invalid_grant), the learner-scoped token of an
// instructor refused on staff routes, the own-token list and revoke
// (another's token 404), a revoked token 401, denial, and bad input as
// problem+json.
func TestDeviceFlowOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			q := jobs.New(db, log)
			srv := compose.Server(compose.Config{DB: db, Queue: q, Catalog: projectCatalog(t), Log: log})
			ts := httptest.NewServer(apitest.Handler(t, srv.Handler()))
			defer ts.Close()
			ctx := t.Context()
			inst, instToken, _ := db.CreateUser(ctx, "wang", domain.RoleInstructor)
			_, otherToken, _ := db.CreateUser(ctx, "li", domain.RoleLearner)
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

			post := func(path string, form url.Values) (int, map[string]any) {
				t.Helper()
				resp, err := client.PostForm(ts.URL+path, form)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var m map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&m)
				if resp.StatusCode != 200 && resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				return resp.StatusCode, m
			}
			start := func() map[string]any {
				t.Helper()
				st, m := post("/api/v1/device/code", url.Values{"client_name": {"npugrade.py on jupyter-abc"}})
				if st != 200 || m["expires_in"] != 600.0 || m["interval"] != 5.0 {
					t.Fatalf("device/code = %d %v", st, m)
				}
				uc := m["user_code"].(string)
				if m["verification_uri"] != ts.URL+"/device" || m["verification_uri_complete"] != ts.URL+"/device?code="+uc {
					t.Fatalf("verification uris %v", m)
				}
				return m
			}
			pollFor := func(dc, want string) map[string]any {
				t.Helper()
				st, m := post("/api/v1/device/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {dc}})
				if want == "" {
					if st != 200 {
						t.Fatalf("token poll = %d %v, want the token", st, m)
					}
					return m
				}
				if st != 400 || m["error"] != want {
					t.Fatalf("token poll = %d %v, want error %s", st, m, want)
				}
				return m
			}
			m := start()
			dc, uc := m["device_code"].(string), m["user_code"].(string)
			pollFor(dc, "authorization_pending")
			pollFor(dc, "slow_down")

			// The instructor signs in on the web and approves.
			sess := signInWeb(t, client, ts.URL, instToken)
			page := getPage(t, client, ts.URL+"/device?code="+strings.ToLower(strings.ReplaceAll(uc, "-", "")), sess)
			if !strings.Contains(page, "npugrade.py on jupyter-abc") || !strings.Contains(page, uc) {
				t.Fatalf("approval page lacks the client or code:\n%s", page)
			}
			csrf := csrfOf(t, page)
			if st := postPage(t, client, ts.URL+"/device", sess, url.Values{"csrf": {"wrong"}, "code": {uc}, "decision": {"approve"}}); st != 403 {
				t.Fatalf("approve without CSRF: %d", st)
			}
			if st := postPage(t, client, ts.URL+"/device", sess, url.Values{"csrf": {csrf}, "code": {uc}, "decision": {"approve"}}); st != 200 {
				t.Fatalf("approve: %d", st)
			}
			if st := postPage(t, client, ts.URL+"/device", sess, url.Values{"csrf": {csrf}, "code": {uc}, "decision": {"approve"}}); st != 409 {
				t.Fatalf("approve twice: %d", st)
			}
			tok := pollFor(dc, "")
			if tok["token_type"] != "Bearer" || tok["scope"] != "learner" || tok["user"] != "wang" {
				t.Fatalf("token = %v", tok)
			}
			pollFor(dc, "invalid_grant")
			access := tok["access_token"].(string)
			if st := apiGet(t, ts.URL+"/api/v1/exercises", access); st != 200 {
				t.Fatalf("exercises with the device token: %d", st)
			}
			if st := apiGet(t, ts.URL+"/api/v1/queue", access); st != 403 {
				t.Fatalf("staff route with a learner-scoped token: %d, want 403", st)
			}
			if st := apiGet(t, ts.URL+"/api/v1/queue", instToken); st != 200 {
				t.Fatalf("staff route with the full token: %d", st)
			}
			// The own-token list: the instructor's two, no secrets.
			req, _ := http.NewRequest("GET", ts.URL+"/api/v1/tokens", nil)
			req.Header.Set("Authorization", "Bearer "+access)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var list struct {
				Tokens []struct {
					ID    int64
					Scope string
					Label string
				}
			}
			if err := json.Unmarshal(body, &list); err != nil || len(list.Tokens) != 2 || list.Tokens[1].Label != "npugrade.py on jupyter-abc" ||
				strings.Contains(string(body), "npg_") || strings.Contains(string(body), "hash") {
				t.Fatalf("own tokens = %s", body)
			}
			id := list.Tokens[1].ID
			del := func(token string) int {
				req, _ := http.NewRequest("DELETE", ts.URL+"/api/v1/tokens/"+jsonNum(id), nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if st := del(otherToken); st != 404 {
				t.Fatalf("revoking another's token: %d, want 404", st)
			}
			if st := del(instToken); st != 204 {
				t.Fatalf("revoke: %d", st)
			}
			if st := apiGet(t, ts.URL+"/api/v1/exercises", access); st != 401 {
				t.Fatalf("revoked device token: %d, want 401", st)
			}
			_ = inst

			// Denied.
			m = start()
			page = getPage(t, client, ts.URL+"/device?code="+m["user_code"].(string), sess)
			if st := postPage(t, client, ts.URL+"/device", sess, url.Values{"csrf": {csrfOf(t, page)}, "code": {m["user_code"].(string)}, "decision": {"deny"}}); st != 200 {
				t.Fatalf("deny: %d", st)
			}
			pollFor(m["device_code"].(string), "access_denied")
			// Bad input.
			pollFor("nonsense", "invalid_grant")
			if st, m := post("/api/v1/device/token", url.Values{"grant_type": {"password"}}); st != 400 || m["error"] != "unsupported_grant_type" {
				t.Fatalf("bad grant type: %d %v", st, m)
			}
			if st, m := post("/api/v1/device/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}); st != 400 || m["error"] != "invalid_grant" {
				t.Fatalf("no device code: %d %v", st, m)
			}
			if st, _ := post("/api/v1/device/code", url.Values{"client_name": {strings.Repeat("x", 101)}}); st != 422 {
				t.Fatalf("long client_name: %d", st)
			}
			if st := getStatus(t, client, ts.URL+"/device?code=BBBB-BBBB", sess); st != 404 {
				t.Fatalf("unknown code page: %d", st)
			}
			if st := getStatus(t, client, ts.URL+"/device", ""); st != 303 {
				t.Fatalf("device page without a session: %d", st)
			}
		})
	}
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

func apiGet(t *testing.T, u, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// signInWeb signs in with token and returns the session cookie's value.
func signInWeb(t *testing.T, c *http.Client, base, token string) string {
	t.Helper()
	resp, err := c.PostForm(base+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "npugrade_session" {
			return ck.Value
		}
	}
	t.Fatalf("sign-in: %d, no session cookie", resp.StatusCode)
	return ""
}

func pageReq(t *testing.T, method, u, sess string, body io.Reader) *http.Request {
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if sess != "" {
		req.AddCookie(&http.Cookie{Name: "npugrade_session", Value: sess})
	}
	return req
}

func getStatus(t *testing.T, c *http.Client, u, sess string) int {
	t.Helper()
	resp, err := c.Do(pageReq(t, "GET", u, sess, nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getPage(t *testing.T, c *http.Client, u, sess string) string {
	t.Helper()
	resp, err := c.Do(pageReq(t, "GET", u, sess, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	return string(b)
}

func postPage(t *testing.T, c *http.Client, u, sess string, form url.Values) int {
	t.Helper()
	req := pageReq(t, "POST", u, sess, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `name="csrf" value="`)
	if !ok {
		t.Fatal("no CSRF token on the page")
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// TestDeviceCodeBaseAndLimit: client_name may come as JSON; the
// verification URI honours X-Forwarded-Proto/Host only from a trusted
// proxy, --public-url over both; an address gets a bounded number of
// codes a minute (then 429 problem+json).
func TestDeviceCodeBaseAndLimit(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, "sqlite")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := compose.Server(compose.Config{DB: db, Queue: jobs.New(db, log), Catalog: projectCatalog(t), Log: log})
	code := func(h http.Handler, fwd bool) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest("POST", "http://grade.local/api/v1/device/code", strings.NewReader(`{"client_name":"nb"}`))
		req.Header.Set("Content-Type", "application/json")
		if fwd {
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("X-Forwarded-Host", "grade.example.edu")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m
	}
	plain := srv.Handler()
	if st, m := code(plain, true); st != 200 || m["verification_uri"] != "http://grade.local/device" {
		t.Fatalf("untrusted forwarded headers: %d %v", st, m)
	}
	srv.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")} // httptest's RemoteAddr
	if st, m := code(srv.Handler(), true); st != 200 || m["verification_uri"] != "https://grade.example.edu/device" {
		t.Fatalf("trusted proxy: %d %v", st, m)
	}
	srv.PublicURL = "https://npugrade.example.org/"
	h := srv.Handler()
	if st, m := code(h, true); st != 200 || m["verification_uri_complete"] != "https://npugrade.example.org/device?code="+m["user_code"].(string) {
		t.Fatalf("public URL: %d %v", st, m)
	}
	for i := 0; ; i++ {
		st, m := code(h, false)
		if st == http.StatusTooManyRequests {
			if i < 50 || m["status"] != 429.0 {
				t.Fatalf("refused after %d codes: %v", i, m)
			}
			break
		}
		if st != 200 || i > 100 {
			t.Fatalf("code %d: %d %v", i, st, m)
		}
	}
}
