package httpapi_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/problem"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// uploadFor posts nb as a submission for exercise with token, with the
// Accept-Language lang (none when empty).
func uploadFor(t *testing.T, e *liveEnv, token, exercise string, nb []byte, lang string) (int, problem.Detail) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", exercise)
	fw, _ := mw.CreateFormFile("notebook", exercise+".ipynb")
	_, _ = fw.Write(nb)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	if lang != "" {
		req.Header.Set("Accept-Language", lang)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p problem.Detail
	_ = json.NewDecoder(resp.Body).Decode(&p)
	return resp.StatusCode, p
}

// TestWrongExerciseRefused: chapter 2's starter uploaded as chapter 1 is
// refused with a 422 problem naming ch2, in Chinese for a learner who
// asks in Chinese; nothing is stored or queued and no attempt of ch1 is
// used. It used to be accepted and graded 3/27 with q13-q17 tampered.
// Each starter is still accepted for its own exercise.
func TestWrongExerciseRefused(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			ada, tok, err := e.db.CreateUser(e.ctx, "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			ch2 := starterOf(t, "ch2")
			st, p := uploadFor(t, e, tok, "ch1", ch2, "")
			if st != http.StatusUnprocessableEntity || len(p.Problems) != 1 || !strings.Contains(p.Problems[0], "exercise ch2's") ||
				!strings.Contains(p.Problems[0], "submit it as ch2") {
				t.Errorf("ch2's starter as ch1: %d %+v, want a 422 naming ch2", st, p)
			}
			st, p = uploadFor(t, e, tok, "ch1", ch2, "zh-CN,zh;q=0.9,en;q=0.5")
			if st != http.StatusUnprocessableEntity || len(p.Problems) != 1 || !strings.Contains(p.Problems[0], "这个笔记本是练习 ch2") {
				t.Errorf("ch2's starter as ch1 in Chinese: %d %+v, want the problem in Chinese", st, p)
			}
			if n, err := e.db.CountSubmissions(e.ctx, ada.ID, "ch1", time.Time{}); err != nil || n != 0 {
				t.Errorf("ch1 attempts after two refused uploads: %d, %v; want 0", n, err)
			}
			depth, err := e.srv.Queue.PendingDepth(e.ctx)
			if err != nil || depth[domain.JobQueued] != 0 {
				t.Errorf("queued after refused uploads: %v, %v; want none", depth, err)
			}
			for _, id := range []string{"ch1", "ch2", "ch3", "ch4", "ch5"} {
				if st, p := uploadFor(t, e, tok, id, starterOf(t, id), ""); st != http.StatusAccepted {
					t.Errorf("%s's own starter: %d %+v, want 202", id, st, p)
				}
			}
		})
	}
}
