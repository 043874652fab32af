package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestListSubmissionsFiltersAndPaging: staff listings name the submitter;
// learner, exercise and status filter; cursor paging visits every
// submission once, newest first; invalid query values answer 422 listing
// every problem; a learner sees only their own, whatever they ask for.
func TestListSubmissionsFiltersAndPaging(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb", "deadline": "2999-01-01T00:00:00Z"}`)
			_, other, err := e.db.CreateUser(context.Background(), "olga", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			var lenaIDs []string
			for i := range 5 {
				st, body := e.submit(t, e.learner, fmt.Sprintf("k%d", i))
				if st != http.StatusAccepted {
					t.Fatalf("submit: %d %s", st, body)
				}
				lenaIDs = append(lenaIDs, between(body, `"id":"`, `"`))
			}
			if st, body := e.submit(t, other, "o"); st != http.StatusAccepted {
				t.Fatalf("submit: %d %s", st, body)
			}

			// Staff: names filled, filter by learner, page by 2.
			list := func(token, query string) ([]map[string]any, string) {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/api/v1/submissions"+query, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out []map[string]any
				if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
					t.Fatalf("GET %s: %d", query, resp.StatusCode)
				}
				next := ""
				if m := regexp.MustCompile(`^</api/v1/submissions(\?[^>]*)>; rel="next"$`).FindStringSubmatch(resp.Header.Get("Link")); m != nil {
					next = m[1]
				}
				return out, next
			}
			all, _ := list(e.teacher, "")
			if len(all) != 6 {
				t.Fatalf("staff list has %d submissions, want 6", len(all))
			}
			for _, s := range all {
				if s["user"] != "lena" && s["user"] != "olga" {
					t.Errorf("staff list entry without the submitter's name: %v", s["user"])
				}
			}
			var paged []string
			query := "?learner=lena&limit=2&status=queued&exercise=pol"
			for pages := 0; query != ""; pages++ {
				if pages > 5 {
					t.Fatal("paging does not end")
				}
				page, next := list(e.teacher, query)
				for _, s := range page {
					paged = append(paged, s["id"].(string))
				}
				query = next
			}
			want := make([]string, len(lenaIDs))
			for i, id := range lenaIDs {
				want[len(lenaIDs)-1-i] = id
			}
			if strings.Join(paged, ",") != strings.Join(want, ",") {
				t.Errorf("paging by 2 gave %v, want newest first %v", paged, want)
			}
			if graded, _ := list(e.teacher, "?status=graded"); len(graded) != 0 {
				t.Errorf("status=graded listed %d queued submissions", len(graded))
			}

			// A learner asking for someone else gets a problem, not their list.
			if own, _ := list(e.learner, ""); len(own) != 5 {
				t.Errorf("learner list has %d, want their 5", len(own))
			}
			if st, body := e.get(t, e.learner, "/api/v1/submissions?learner=olga"); st != http.StatusUnprocessableEntity || !strings.Contains(body, "no such learner") {
				t.Errorf("learner naming another learner: %d %s", st, body)
			}

			// Every invalid value is listed in one problem.
			st, body := e.get(t, e.teacher, "/api/v1/submissions?limit=abc&status=done&exercise=nope&learner=nobody&cursor=%21%21")
			if st != http.StatusUnprocessableEntity {
				t.Fatalf("invalid query: %d %s", st, body)
			}
			for _, want := range []string{`limit=\"abc\"`, `status=\"done\"`, `exercise=\"nope\"`, `learner=\"nobody\"`, "cursor"} {
				if !strings.Contains(body, want) {
					t.Errorf("problem does not list %s: %s", want, body)
				}
			}
			for _, q := range []string{"limit=0", "limit=1001", "limit=-1"} {
				if st, body := e.get(t, e.teacher, "/api/v1/submissions?"+q); st != http.StatusUnprocessableEntity {
					t.Errorf("%s: %d %s", q, st, body)
				}
			}
		})
	}
}
