package httpapi_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// getAs sends GET path with token, as from the address forwardedFor
// names in X-Forwarded-For (none when empty), and returns the status and
// Retry-After.
func getAs(t *testing.T, e *liveEnv, path, token, forwardedFor string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestValidTokensNotThrottled: 25 bad tokens from one address get 401
// and, past the 20 a minute allowed, 429 with Retry-After; a learner's
// and a runner's valid tokens from that same address still get in (the
// API, the runner protocol and the sign-in page): behind a campus NAT
// one address is a whole class. They used to get 429 for a minute.
func TestValidTokensNotThrottled(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			ada := e.token(t, "ada", domain.RoleLearner)
			rtok := e.token(t, "lab-runner", domain.RoleRunner)
			id := e.register(t, rtok, "lab-1")
			for i := range 25 {
				want := http.StatusUnauthorized
				if i >= 20 {
					want = http.StatusTooManyRequests
				}
				st, retry := getAs(t, e, "/api/v1/exercises", "npg_typo_"+strings.Repeat("x", i), "")
				if st != want || (want == http.StatusTooManyRequests && retry == "") {
					t.Fatalf("bad token %d: %d (Retry-After %q), want %d", i+1, st, retry, want)
				}
			}
			if st, _ := getAs(t, e, "/api/v1/exercises", ada, ""); st != http.StatusOK {
				t.Errorf("a valid learner after 25 bad tokens from the address: %d, want 200", st)
			}
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", rtok, runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: 0.1}); st != http.StatusNoContent {
				t.Errorf("a valid runner's claim after 25 bad tokens from the address: %d %s, want 204", st, body)
			}
			e.register(t, rtok, "lab-1")
			noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noRedirect.PostForm(e.url+"/login", url.Values{"token": {ada}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("signing in with a valid token after 25 bad ones from the address: %d, want 303", resp.StatusCode)
			}
			// The bad ones are still refused.
			if st, _ := getAs(t, e, "/api/v1/exercises", "npg_typo", ""); st != http.StatusTooManyRequests {
				t.Errorf("a bad token after the valid ones: %d, want 429", st)
			}
		})
	}
}

// TestTrustedProxies: with --trusted-proxies naming the proxy (here the
// test's own loopback address), clients behind it are throttled by the
// right-most X-Forwarded-For address outside the trusted ones, each on
// its own, and one cannot dodge by prepending addresses; without it the
// header is ignored and everyone is the connection's address.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	throttle := func(t *testing.T, e *liveEnv, forwardedFor string) {
		t.Helper()
		for i := range 20 {
			if st, _ := getAs(t, e, "/api/v1/exercises", "npg_typo", forwardedFor); st != http.StatusUnauthorized {
				t.Fatalf("bad token %d as %s: %d, want 401", i+1, forwardedFor, st)
			}
		}
		if st, _ := getAs(t, e, "/api/v1/exercises", "npg_typo", forwardedFor); st != http.StatusTooManyRequests {
			t.Fatalf("21st bad token as %s: %d, want 429", forwardedFor, st)
		}
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			t.Run("trusted", func(t *testing.T) {
				t.Parallel()
				proxies, err := httpapi.ParseTrustedProxies("10.9.0.0/16, 127.0.0.1")
				if err != nil {
					t.Fatal(err)
				}
				e := newLiveEnvWith(t, d, projectCatalog(t), httpapi.DefaultTimeouts(), func(s *httpapi.Server) { s.TrustedProxies = proxies })
				throttle(t, e, "203.0.113.7")
				if st, _ := getAs(t, e, "/api/v1/exercises", "npg_typo", "203.0.113.8"); st != http.StatusUnauthorized {
					t.Errorf("another client behind the proxy: %d, want 401 (its own count)", st)
				}
				// The proxy appends what it saw; what the client wrote
				// before it, and trusted hops after it, do not count.
				for _, xff := range []string{"203.0.113.8, 203.0.113.7", "203.0.113.7, 10.9.1.1"} {
					if st, _ := getAs(t, e, "/api/v1/exercises", "npg_typo", xff); st != http.StatusTooManyRequests {
						t.Errorf("X-Forwarded-For %q: %d, want 429 (it is 203.0.113.7)", xff, st)
					}
				}
			})
			t.Run("untrusted", func(t *testing.T) {
				t.Parallel()
				e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
				throttle(t, e, "203.0.113.7")
				if st, _ := getAs(t, e, "/api/v1/exercises", "npg_typo", "203.0.113.8"); st != http.StatusTooManyRequests {
					t.Errorf("another X-Forwarded-For without trusted proxies: %d, want 429 (the header is ignored)", st)
				}
			})
		})
	}
}

// TestParseTrustedProxies: CIDRs and lone addresses, spaces allowed;
// every bad entry is named.
func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := httpapi.ParseTrustedProxies(" 10.0.0.0/8,192.168.1.7, fd00::/8,,")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("fd00::/8")}
	if err != nil || len(got) != len(want) {
		t.Fatalf("parse: %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := httpapi.ParseTrustedProxies("10.0.0.0/33,proxy.campus,10.1.0.0/16"); err == nil ||
		!strings.Contains(err.Error(), `"10.0.0.0/33"`) || !strings.Contains(err.Error(), `"proxy.campus"`) {
		t.Errorf("bad entries: %v", err)
	}
	if got, err := httpapi.ParseTrustedProxies(""); err != nil || got != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
}
