package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestSubmissionSpeaksTheReadersLanguage: a reader who prefers Chinese
// (the notebook client and `submit` under a Chinese locale send
// Accept-Language: zh-CN) gets the grader's messages, redaction notes
// included, in the words the pages use; others get them as stored.
func TestSubmissionSpeaksTheReadersLanguage(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "pol", "starter": "s.ipynb", "answer": "a.ipynb"}`)
			id := e.graded(t, e.learner, "", store.Grade{Score: 1, MaxScore: 3, Profile: "cpu", Cells: []domain.CellResult{
				{CellID: "open", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true, Message: "output differs from the expected output at line 2 (column 5)"},
				{CellID: "closed", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true, Message: "SECRET"},
				{CellID: "later", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true},
			}})
			get := func(lang string) string {
				req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/api/v1/submissions/"+id, nil)
				req.Header.Set("Authorization", "Bearer "+e.learner)
				if lang != "" {
					req.Header.Set("Accept-Language", lang)
				}
				st, body := e.do(t, req)
				if st != http.StatusOK {
					t.Fatalf("GET as %q: %d %s", lang, st, body)
				}
				return body
			}
			zh := get("zh-CN,zh;q=0.9,en;q=0.5")
			for _, want := range []string{"输出第 2 行（第 5 列）与期望输出不同", "本题的详细信息已隐藏"} {
				if !strings.Contains(zh, want) {
					t.Errorf("the Chinese reader's submission lacks %q: %s", want, zh)
				}
			}
			if strings.Contains(zh, "output differs") || strings.Contains(zh, "SECRET") {
				t.Errorf("the Chinese reader got English or a hidden message: %s", zh)
			}
			if en := get("en"); !strings.Contains(en, "output differs from the expected output at line 2 (column 5)") || strings.Contains(en, "输出第") {
				t.Errorf("the English reader's submission: %s", en)
			}
		})
	}
}
