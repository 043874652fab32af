package web_test

import (
	"context"
	"html"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestStagedReferencePages: an instructor sees a runner's recording with
// its per-cell diff (in Chinese and English), accepts one and rejects
// another from the page; only the accepted one becomes the reference
// grading reads. Learners may not open the pages.
func TestStagedReferencePages(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			ctx := context.Background()
			ex, err := e.cat.Get("ch1")
			if err != nil {
				t.Fatal(err)
			}
			stage := func(text string) string {
				var id int64
				err := e.db.InTx(ctx, func(tx *store.Tx) error {
					var err error
					id, err = tx.StageReference(store.StoredReference{ExerciseID: "ch1", Profile: "npu-a2", AnswerSHA256: ex.AnswerSHA256(),
						Cells: []byte(`{"q1": [{"output_type": "stream", "name": "stdout", "text": "` + text + `"}]}`), RunnerID: "lab-a2-1"})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				return strconv.FormatInt(id, 10)
			}
			first := stage("made up 1")
			teacher, learner := e.user(t, "teacher", domain.RoleInstructor), e.user(t, "ada", domain.RoleLearner)
			c, lc := client(), client()
			e.signIn(t, c, teacher)
			e.signIn(t, lc, learner)
			if resp, _ := do(t, lc, "GET", e.srv.URL+"/dashboard/references/"+first, nil, nil); resp.StatusCode != 403 {
				t.Errorf("a learner opens a staged reference: %d", resp.StatusCode)
			}
			resp, body := do(t, c, "GET", e.srv.URL+"/dashboard/references?lang=zh-CN", nil, nil)
			if resp.StatusCode != 200 || !strings.Contains(body, `href="/dashboard/references/`+first+`"`) || !strings.Contains(body, "待审核") {
				t.Fatalf("staged references page (zh-CN): %d %s", resp.StatusCode, body)
			}
			resp, body = do(t, c, "GET", e.srv.URL+"/dashboard/references/"+first+"?lang=en", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if resp.StatusCode != 200 || m == nil || !strings.Contains(body, "made up 1") || !strings.Contains(body, `id="ref-accept"`) ||
				!strings.Contains(between(body, `id="ref-against"`, "</dd>"), "no reference yet") {
				t.Fatalf("staged reference page: %d %s", resp.StatusCode, body)
			}
			if resp, _ := do(t, c, "POST", e.srv.URL+"/dashboard/references/"+first+"/accept", url.Values{}, nil); resp.StatusCode != 403 {
				t.Errorf("accept without CSRF: %d", resp.StatusCode)
			}
			if _, err := e.db.Reference(ctx, "ch1", "npu-a2"); err == nil {
				t.Fatal("a staged reference is in use before it was accepted")
			}
			if resp, _ := do(t, c, "POST", e.srv.URL+"/dashboard/references/"+first+"/accept", url.Values{"csrf": {m[1]}, "note": {"same as the lab's notes"}}, nil); resp.StatusCode != 303 {
				t.Fatalf("accept: %d", resp.StatusCode)
			}
			if ref, err := e.db.Reference(ctx, "ch1", "npu-a2"); err != nil || !strings.Contains(string(ref.Cells), "made up 1") {
				t.Fatalf("accepted reference: %v %v", string(ref.Cells), err)
			}

			second := stage("made up 2")
			_, body = do(t, c, "GET", e.srv.URL+"/dashboard/references/"+second+"?lang=zh-CN", nil, nil)
			body = html.UnescapeString(body)
			if !strings.Contains(body, "-made up 1") || !strings.Contains(body, "+made up 2") || !strings.Contains(body, "有变化") {
				t.Fatalf("diff against the accepted reference (zh-CN): %s", body)
			}
			if resp, _ := do(t, c, "POST", e.srv.URL+"/dashboard/references/"+second+"/reject", url.Values{"csrf": {m[1]}}, nil); resp.StatusCode != 303 {
				t.Fatalf("reject: %d", resp.StatusCode)
			}
			if ref, err := e.db.Reference(ctx, "ch1", "npu-a2"); err != nil || !strings.Contains(string(ref.Cells), "made up 1") {
				t.Fatalf("after a reject: %v %v", string(ref.Cells), err)
			}
			_, body = do(t, c, "GET", e.srv.URL+"/dashboard/references/"+second+"?lang=en", nil, nil)
			if !strings.Contains(between(body, `id="ref-state"`, "</span>"), "rejected") || strings.Contains(body, `id="ref-accept"`) {
				t.Errorf("a rejected reference's page: %s", body)
			}
			if resp, _ := do(t, c, "POST", e.srv.URL+"/dashboard/references/"+second+"/accept", url.Values{"csrf": {m[1]}}, nil); resp.StatusCode != 409 {
				t.Errorf("accept after reject: %d", resp.StatusCode)
			}
		})
	}
}
