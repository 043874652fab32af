package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestProblemsInChinese: an upload that is not a notebook, to an
// exercise that does not exist, is refused with its detail and every
// problem in Chinese for a reader who asks in Chinese, and in English
// otherwise; the title stays the HTTP status's.
func TestProblemsInChinese(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			_, tok, err := e.db.CreateUser(e.ctx, "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			st, p := uploadFor(t, e, tok, "ch99", []byte("this is not a notebook"), "")
			if st != http.StatusUnprocessableEntity || p.Detail != "the submission is not valid" || len(p.Problems) != 2 {
				t.Fatalf("in English: %d %+v", st, p)
			}
			st, p = uploadFor(t, e, tok, "ch99", []byte("this is not a notebook"), "zh-CN,zh;q=0.9,en;q=0.5")
			all := strings.Join(p.Problems, "\n")
			if st != http.StatusUnprocessableEntity || p.Detail != "提交无效" || p.Title != "Unprocessable Entity" ||
				!strings.Contains(all, `未知的练习 "ch99"`) || !strings.Contains(all, "笔记本不是有效的 JSON") {
				t.Errorf("in Chinese: %d %+v", st, p)
			}
		})
	}
}
