package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestWebDeviceSignIn: a learner signs in on the web at the client's
// verification_uri_complete and approves; the polling client gets the
// token and lists exercises with it; the learner revokes it on the
// account page, and the token is refused at once.
func TestWebDeviceSignIn(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	dbURL := storetest.URL(t, "sqlite")
	learnerTok := addUser(t, dbURL, "ada", "learner")
	s := startServer(t, dbURL)
	defer s.stop()

	resp, err := http.PostForm(s.url+"/api/v1/device/code", url.Values{"client_name": {"npugrade.py on jupyter-abc"}})
	if err != nil {
		t.Fatal(err)
	}
	var dc deviceCodeReply
	if err := json.NewDecoder(resp.Body).Decode(&dc); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	poll := func() (int, map[string]any) {
		resp, err := http.PostForm(s.url+"/api/v1/device/token",
			url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {dc.DeviceCode}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if st, m := poll(); st != 400 || m["error"] != "authorization_pending" {
		t.Fatalf("first poll: %d %v", st, m)
	}

	l := newTab(t, s.url)
	path := strings.TrimPrefix(dc.VerificationURIComplete, s.url)
	l.signIn(path, learnerTok)
	if got := l.text("#device-client"); got != "npugrade.py on jupyter-abc" {
		t.Fatalf("client on the approval page: %q", got)
	}
	if got := l.text("#device-code"); got != dc.UserCode {
		t.Fatalf("code on the approval page: %q, want %q", got, dc.UserCode)
	}
	l.shot("01-approve")
	l.do("approve", chromedp.Click(chromedp.CSS("#device-approve")), chromedp.WaitVisible(chromedp.CSS("#device-message")))
	l.shot("02-approved")

	var token string
	for deadline := time.Now().Add(30 * time.Second); token == ""; {
		time.Sleep(time.Duration(dc.Interval)*time.Second + 100*time.Millisecond)
		st, m := poll()
		switch {
		case st == 200:
			token, _ = m["access_token"].(string)
		case m["error"] != "authorization_pending" && m["error"] != "slow_down":
			t.Fatalf("poll: %d %v", st, m)
		case time.Now().After(deadline):
			t.Fatal("no token within 30 s of the approval")
		}
	}
	exercises := func() int {
		req, _ := http.NewRequest("GET", s.url+"/api/v1/exercises", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := exercises(); st != 200 {
		t.Fatalf("exercises with the device token: %d", st)
	}

	l.do("account page", chromedp.Navigate(s.url+"/account"), chromedp.WaitVisible(chromedp.CSS("#tokens")))
	if page := l.text("#tokens"); !strings.Contains(page, "npugrade.py on jupyter-abc") {
		t.Fatalf("account page lacks the device:\n%s", page)
	}
	l.shot("03-account")
	rows := eval[int](l, `document.querySelectorAll("#tokens tbody tr").length`)
	eval[bool](l, `window.oldPage = true`)
	l.do("revoke", chromedp.Click(chromedp.CSS(`#tokens tbody tr:last-child button[type=submit]`)))
	// The click navigates: read the new page's list, retrying while the
	// old page is being replaced.
	after := -1
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		n, err := chromedp.Run(l.ctx, chromedp.Evaluate[int](`!window.oldPage && document.readyState === "complete" ? document.querySelectorAll("#tokens tbody tr").length : -1`))
		if err == nil && n >= 0 {
			after = n
			break
		}
	}
	if after != rows-1 {
		t.Fatalf("%d tokens listed after the revoke, want %d", after, rows-1)
	}
	l.shot("04-revoked")
	if st := exercises(); st != 401 {
		t.Fatalf("revoked device token: %d, want 401", st)
	}
}
