package web_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// postFile posts one file as form field on a page's multipart form, with
// csrf unless it is empty.
func postFile(t *testing.T, c *http.Client, u, csrf, field string, data []byte) (*http.Response, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if csrf != "" {
		_ = mw.WriteField("csrf", csrf)
	}
	if field != "" {
		fw, _ := mw.CreateFormFile(field, "upload")
		_, _ = fw.Write(data)
	}
	_ = mw.Close()
	req, _ := http.NewRequest("POST", u, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestUploadRefusals: the page's upload form answers a missing CSRF token
// with 403, a form without a notebook with 422 and a notebook over the
// limit with 413, each on the exercise page with the problem, as the API
// maps the same errors; nothing is stored for any of them.
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			c := client()
			e.signIn(t, c, e.user(t, "ada", domain.RoleLearner))
			_, body := do(t, c, "GET", e.srv.URL+"/exercises/ch1", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if m == nil {
				t.Fatal("exercise page has no CSRF token")
			}
			target := e.srv.URL + "/exercises/ch1/submissions"
			if resp, _ := postFile(t, c, target, "", "notebook", []byte("{}")); resp.StatusCode != 403 {
				t.Errorf("no CSRF token: %d", resp.StatusCode)
			}
			if resp, body := postFile(t, c, target, m[1], "", nil); resp.StatusCode != 422 || !strings.Contains(body, ".ipynb") {
				t.Errorf("no notebook: %d", resp.StatusCode)
			}
			big := bytes.Repeat([]byte(" "), 9<<20)
			if resp, body := postFile(t, c, target, m[1], "notebook", big); resp.StatusCode != 413 || !strings.Contains(body, "byte limit") {
				t.Errorf("too large: %d", resp.StatusCode)
			}
			if _, body := do(t, c, "GET", e.srv.URL+"/exercises/ch1", nil, nil); strings.Contains(body, `href="/submissions/`) {
				t.Error("a refused upload was stored")
			}
		})
	}
}
