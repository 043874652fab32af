package httpapi_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestRosterHTTP: POST /api/v1/roster imports a class roster for admins
// only: a roster of 500 in one call, tokens given once (JSON, or CSV on
// request) that work; importing again updates instead of duplicating; a
// bad roster lists every bad row at once as problem+json and imports
// nobody; everything is in the audit log.
func TestRosterHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb"}`)
			_, admin, err := e.db.CreateUser(ctx, "root", domain.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			post := func(token, ctype, accept, body string) (int, http.Header, string) {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/api/v1/roster", strings.NewReader(body))
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				req.Header.Set("Content-Type", ctype)
				if accept != "" {
					req.Header.Set("Accept", accept)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, resp.Header, string(b)
			}
			var roster strings.Builder
			roster.WriteString("name,student_number,section,role\n")
			for i := range 500 {
				fmt.Fprintf(&roster, "Learner %d,S%04d,%s,learner\n", i, i, []string{"Red", "Blue"}[i%2])
			}
			for _, tc := range []struct {
				who, token string
				want       int
			}{{"anonymous", "", 401}, {"learner", e.learner, 403}, {"instructor", e.teacher, 403}} {
				if st, h, body := post(tc.token, "text/csv", "", roster.String()); st != tc.want || h.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s: %d %s %s", tc.who, st, h.Get("Content-Type"), body)
				}
			}
			if st, _, body := post(admin, "application/json", "", `{"roster": []}`); st != 422 || !strings.Contains(body, "text/csv") {
				t.Errorf("JSON body: %d %s", st, body)
			}
			// Every bad row at once; nobody imported.
			bad := "name,student_number,section,role\nGood One,G1,Red,learner\nNo Number,,Red,learner\nBad Role,B2,Red,wizard\nDup,G1,Red,learner\n"
			st, h, body := post(admin, "text/csv; charset=utf-8", "", bad)
			var prob struct {
				Status   int      `json:"status"`
				Problems []string `json:"problems"`
			}
			if err := json.Unmarshal([]byte(body), &prob); err != nil || st != 422 || h.Get("Content-Type") != "application/problem+json" || len(prob.Problems) != 3 {
				t.Errorf("bad roster: %d %s %s", st, h.Get("Content-Type"), body)
			}
			if _, err := e.db.UserByName(ctx, "G1"); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Errorf("a bad roster imported G1: %v", err)
			}

			// 500 in one call.
			st, h, body = post(admin, "text/csv", "", roster.String())
			var res httpapi.RosterResultJSON
			if err := json.Unmarshal([]byte(body), &res); err != nil || st != 201 || len(res.Created) != 500 || h.Get("Cache-Control") != "no-store" {
				t.Fatalf("import of 500: %d %v %.300s", st, err, body)
			}
			first := res.Created[0]
			if first.Login != "S0000" || first.Name != "Learner 0" || first.Section != "Red" || first.Role != "learner" || !strings.HasPrefix(first.Token, "npg_") {
				t.Errorf("first created: %+v", first)
			}
			if st, body := e.get(t, res.Created[499].Token, "/api/v1/exercises"); st != 200 {
				t.Errorf("a new learner's token: %d %s", st, body)
			}
			// Again, one section changed: updated, nobody new, no token.
			again := strings.Replace(roster.String(), "Learner 7,S0007,Blue", "Learner 7,S0007,Red", 1)
			st, _, body = post(admin, "text/csv", "", again)
			res = httpapi.RosterResultJSON{}
			if err := json.Unmarshal([]byte(body), &res); err != nil || st != 200 || len(res.Created) != 0 || len(res.Updated) != 1 || res.Updated[0] != "S0007" || res.Unchanged != 499 {
				t.Errorf("re-import: %d %s", st, body)
			}
			if u, err := e.db.UserByName(ctx, "S0007"); err != nil || u.Section != "Red" {
				t.Errorf("S0007 after the re-import: %+v %v", u, err)
			}
			// The tokens as CSV, on request.
			st, h, body = post(admin, "text/csv", "text/csv", "name,email,section,role\nNew Person,New@Example.org,Green,instructor\n")
			recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if err != nil || st != 201 || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") || len(recs) != 2 ||
				strings.Join(recs[0], ",") != "login,name,section,role,token" || recs[1][0] != "new@example.org" || recs[1][3] != "instructor" {
				t.Errorf("CSV answer: %d %s %q", st, h.Get("Content-Type"), body)
			}

			evs, err := e.db.AuditEvents(ctx, 2000)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for _, ev := range evs {
				if ev.Actor == "root" {
					counts[ev.Action]++
				}
			}
			if counts[domain.AuditUserCreated] != 501 || counts[store.AuditRosterUpdated] != 1 || counts[store.AuditRosterImported] != 3 {
				t.Errorf("audit log: %v", counts)
			}
		})
	}
}
