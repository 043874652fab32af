package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// exerciseCopies writes the rxref test exercise under each id with its
// exercise.json changed by edit (the id set to it).
func exerciseCopies(t *testing.T, edits map[string]func(cfg map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	for id, edit := range edits {
		for _, sub := range []string{"exercises", "answers"} {
			src := filepath.Join("../../cmd/npugrade/testdata/runners", sub, "rxref")
			dst := filepath.Join(dir, sub, id)
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.IsDir() {
					continue
				}
				b, err := os.ReadFile(filepath.Join(src, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if e.Name() == "exercise.json" {
					var cfg map[string]any
					if err := json.Unmarshal(b, &cfg); err != nil {
						t.Fatal(err)
					}
					cfg["id"] = id
					edit(cfg)
					b, _ = json.Marshal(cfg)
				}
				if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return dir
}

// TestChecksHaveTheirOwnLimits: on an exercise with max_submissions 1 and
// checks {count 2}, a learner who used the one submission may still
// check, twice, and the third check is 429 with Retry-After while the
// learner's submissions list and attempts stay as they were; an exercise
// with checks: false refuses a check (403) and still takes a submission.
// GET /api/v1/checks/{id} answers only for checks.
func TestChecksHaveTheirOwnLimits(t *testing.T) {
	t.Parallel()
	dir := exerciseCopies(t, map[string]func(map[string]any){
		"capped": func(c map[string]any) {
			c["max_submissions"] = 1
			c["checks"] = map[string]any{"count": 2, "per": "1h"}
		},
		"nochecks": func(c map[string]any) { c["checks"] = false },
	})
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e, cat := newLiveEnvAt(t, d, filepath.Join(dir, "exercises"), filepath.Join(dir, "answers"))
			ex, err := cat.Get("capped")
			if err != nil {
				t.Fatal(err)
			}
			ada := e.token(t, "ada", domain.RoleLearner)
			post := func(path, exercise string) (int, map[string]any, http.Header) {
				t.Helper()
				var body bytes.Buffer
				mw := multipart.NewWriter(&body)
				_ = mw.WriteField("exercise", exercise)
				fw, _ := mw.CreateFormFile("notebook", "nb.ipynb")
				_, _ = fw.Write(ex.AnswerBytes)
				_ = mw.Close()
				req, _ := http.NewRequest("POST", e.url+path, &body)
				req.Header.Set("Content-Type", mw.FormDataContentType())
				req.Header.Set("Authorization", "Bearer "+ada)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var out map[string]any
				_ = json.Unmarshal(b, &out)
				return resp.StatusCode, out, resp.Header
			}
			st, sub, _ := post("/api/v1/submissions", "capped")
			if st != 202 || sub["kind"] != "submission" {
				t.Fatalf("the one submission: %d %v", st, sub)
			}
			if st, body, _ := post("/api/v1/submissions", "capped"); st != 409 {
				t.Fatalf("a second submission under max_submissions 1: %d %v", st, body)
			}
			var checkID string
			for i := 0; i < 2; i++ {
				st, chk, hdr := post("/api/v1/checks", "capped")
				if st != 202 || chk["kind"] != "check" || hdr.Get("Location") != "/api/v1/checks/"+chk["id"].(string) {
					t.Fatalf("check %d after the submissions are used up: %d %v %v", i, st, chk, hdr)
				}
				checkID = chk["id"].(string)
			}
			st, body, hdr := post("/api/v1/checks", "capped")
			if st != 429 || hdr.Get("Retry-After") == "" || !strings.Contains(body["detail"].(string), "At most 2 checks of exercise capped") {
				t.Fatalf("third check in a window of two: %d %v %v", st, body, hdr)
			}
			if st, body, _ := post("/api/v1/checks", "nochecks"); st != 403 || !strings.Contains(body["detail"].(string), "offers no checks") {
				t.Fatalf("a check of an exercise with checks off: %d %v", st, body)
			}
			if st, body, _ := post("/api/v1/submissions", "nochecks"); st != 202 {
				t.Fatalf("a submission of an exercise with checks off: %d %v", st, body)
			}

			code, list, _ := e.call(t, "GET", "/api/v1/submissions?exercise=capped", ada, nil)
			var subs []map[string]any
			_ = json.Unmarshal([]byte(list), &subs)
			if code != 200 || len(subs) != 1 || subs[0]["id"] != sub["id"] {
				t.Fatalf("submissions list: %d %s, want only %v", code, list, sub["id"])
			}
			code, list, _ = e.call(t, "GET", "/api/v1/checks?exercise=capped", ada, nil)
			var checks []map[string]any
			_ = json.Unmarshal([]byte(list), &checks)
			if code != 200 || len(checks) != 2 {
				t.Fatalf("checks list: %d %s, want 2", code, list)
			}
			if code, _, _ := e.call(t, "GET", "/api/v1/checks/"+checkID, ada, nil); code != 200 {
				t.Fatalf("GET the check: %d", code)
			}
			if code, _, _ := e.call(t, "GET", "/api/v1/checks/"+sub["id"].(string), ada, nil); code != 404 {
				t.Fatalf("GET a submission as a check: %d, want 404", code)
			}
			code, status, _ := e.call(t, "GET", "/api/v1/status", ada, nil)
			var sts []map[string]any
			_ = json.Unmarshal([]byte(status), &sts)
			found := false
			for _, s := range sts {
				switch s["exercise"] {
				case "capped":
					found = true
					if s["attempts"] != 1.0 || s["attempts_left"] != 0.0 || s["checks"].(map[string]any)["count"] != 2.0 {
						t.Errorf("status of capped = %v", s)
					}
				case "nochecks":
					if s["checks"] != nil || s["attempts_left"] != nil {
						t.Errorf("status of nochecks = %v", s)
					}
				}
			}
			if code != 200 || !found {
				t.Fatalf("status: %d %s", code, status)
			}
		})
	}
}
