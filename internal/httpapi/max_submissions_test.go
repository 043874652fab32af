package httpapi_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestMaxSubmissionsUnderConcurrentUploads: one learner sends 12 uploads
// at once to an exercise with max_submissions 3. Exactly 3 are accepted;
// the others get a 409 problem saying the submissions are used up (the
// check used to read the count before inserting, so several passed).
func TestMaxSubmissionsUnderConcurrentUploads(t *testing.T) {
	t.Parallel()
	dir := exerciseCopies(t, map[string]func(map[string]any){"rxref": func(c map[string]any) { c["max_submissions"] = 3 }})
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e, cat := newLiveEnvAt(t, d, filepath.Join(dir, "exercises"), filepath.Join(dir, "answers"))
			ex, err := cat.Get("rxref")
			if err != nil {
				t.Fatal(err)
			}
			ada := e.token(t, "ada", domain.RoleLearner)
			const n = 12
			var wg sync.WaitGroup
			codes := make([]int, n)
			bodies := make([]string, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], bodies[i] = uploadConcurrent(e, ada, "rxref", ex.AnswerBytes)
				}()
			}
			wg.Wait()
			accepted := 0
			for i, c := range codes {
				switch {
				case c == http.StatusAccepted:
					accepted++
				case c == http.StatusConflict && strings.Contains(bodies[i], "used all 3 submissions"):
				default:
					t.Errorf("upload %d: %d %s, want 202 or a 409 problem", i, c, bodies[i])
				}
			}
			if accepted != 3 {
				t.Errorf("%d of %d concurrent uploads accepted, want exactly max_submissions = 3", accepted, n)
			}
			var stored int64
			if err := e.db.RawScan(e.ctx, &stored, "SELECT COUNT(*) FROM submissions"); err != nil || stored != 3 {
				t.Errorf("%d submissions stored (%v), want 3", stored, err)
			}
		})
	}
}

// uploadConcurrent submits nb and returns the status and body (no t: it runs
// in goroutines).
func uploadConcurrent(e *liveEnv, token, exerciseID string, nb []byte) (int, string) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", exerciseID)
	fw, _ := mw.CreateFormFile("notebook", "nb.ipynb")
	_, _ = fw.Write(nb)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
