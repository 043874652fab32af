package accounts_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// class writes a roster of n learners in sections A–D, and one TA.
func class(n int, section func(i int) string) string {
	var b strings.Builder
	b.WriteString("name,student_number,email,section,role\n")
	for i := range n {
		fmt.Fprintf(&b, "学生 %d,2026%04d,s%d@example.edu,%s,learner\n", i, i, i, section(i))
	}
	b.WriteString("\"Tan, Ada\",,ada.tan@Example.edu,A,instructor\n")
	return b.String()
}

// TestImportRosterOf500: a roster of 500 imports in one call on both
// databases, its tokens work and are returned once as CSV; importing it
// again duplicates nobody and only moves the learners whose section
// changed; all of it is in the audit log.
func TestImportRosterOf500(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			admin, _, _ := db.CreateUser(ctx, "root", domain.RoleAdmin)
			svc := &accounts.Rosters{DB: db}
			sections := func(i int) string { return string(rune('A' + i%4)) }
			res, err := svc.Import(ctx, admin, strings.NewReader(class(500, sections)))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Created) != 501 || len(res.Updated) != 0 || res.Unchanged != 0 {
				t.Fatalf("first import: %d created, %d updated, %d unchanged", len(res.Created), len(res.Updated), res.Unchanged)
			}
			var out bytes.Buffer
			if err := accounts.WriteTokens(&out, res.Created); err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(&out).ReadAll()
			if err != nil || len(recs) != 502 || strings.Join(recs[0], ",") != "login,name,section,role,token" {
				t.Fatalf("tokens CSV: %d rows, %v", len(recs), err)
			}
			// Any token works, as its user.
			row := recs[123]
			u, err := db.UserByToken(ctx, row[4])
			if err != nil || u.Name != row[0] || u.Section != row[2] || u.FullName != row[1] || u.Role != domain.RoleLearner {
				t.Errorf("token of %v: %+v %v", row[:4], u, err)
			}
			ta, err := db.UserByName(ctx, "ada.tan@example.edu")
			if err != nil || ta.Role != domain.RoleInstructor || ta.FullName != "Tan, Ada" || ta.Section != "A" {
				t.Errorf("the TA (email lower-cased as the login): %+v %v", ta, err)
			}

			// Again, with the first ten moved to section Z.
			moved := func(i int) string {
				if i < 10 {
					return "Z"
				}
				return sections(i)
			}
			res, err = svc.Import(ctx, admin, strings.NewReader(class(500, moved)))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Created) != 0 || len(res.Updated) != 10 || res.Unchanged != 491 {
				t.Errorf("re-import: %d created, %d updated, %d unchanged", len(res.Created), len(res.Updated), res.Unchanged)
			}
			users, _ := db.ListUsers(ctx)
			if len(users) != 502 {
				t.Errorf("%d users after two imports, want 502", len(users))
			}
			if u, _ := db.UserByName(ctx, "20260003"); u.Section != "Z" {
				t.Errorf("moved learner in section %q", u.Section)
			}
			secs, err := db.Sections(ctx)
			if err != nil || strings.Join(secs, "") != "ABCDZ" {
				t.Errorf("sections %v %v", secs, err)
			}
			events, _ := db.AuditEvents(ctx, 5000)
			count := map[string]int{}
			for _, ev := range events {
				count[ev.Action]++
				if ev.Actor != "root" {
					t.Fatalf("audit entry by %q: %+v", ev.Actor, ev)
				}
			}
			if count[domain.AuditUserCreated] != 501 || count[store.AuditRosterUpdated] != 10 || count[store.AuditRosterImported] != 2 {
				t.Errorf("audit log: %v", count)
			}
		})
	}
}

// TestRosterBadRowsAllAtOnce: every bad row is reported in one answer,
// by line, and nothing is imported.
func TestRosterBadRowsAllAtOnce(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			if _, _, err := db.CreateUser(ctx, "r1", domain.RoleRunner); err != nil {
				t.Fatal(err)
			}
			svc := &accounts.Rosters{DB: db}
			bad := "name,student_number,email,section,role\n" +
				"Ada,1001,ada@example.edu,A,learner\n" + // line 2: fine
				"Bob,,,A,learner\n" + // 3: no login
				"Cy,1003,not-an-email,A,learner\n" + // 4: email
				"Di,10 04,,A,learner\n" + // 5: number
				"Ed,1005,,A,wizard\n" + // 6: role
				"Fay,1001,,B,learner\n" + // 7: duplicate of line 2
				"Gus,1007,,A\n" + // 8: field count
				"Hal,1008,,A,runner\n" // 9: runner is no roster role
			_, err := svc.Import(ctx, domain.User{}, strings.NewReader(bad))
			probs := domain.ErrorProblems(err)
			if domain.ErrorCode(err) != domain.EINVALID || len(probs) != 7 {
				t.Fatalf("bad roster: %v", err)
			}
			for i, line := range []string{"line 3", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9"} {
				if !strings.HasPrefix(probs[i], line+":") {
					t.Errorf("problem %d %q, want %s", i, probs[i], line)
				}
			}
			if !strings.Contains(probs[4], "also on line 2") {
				t.Errorf("duplicate: %q", probs[4])
			}
			if users, _ := db.ListUsers(ctx); len(users) != 1 {
				t.Errorf("a bad roster imported %d users", len(users)-1)
			}
			// The list is bounded.
			var many strings.Builder
			many.WriteString("student_number,role\n")
			for i := range 300 {
				fmt.Fprintf(&many, "%d,boss\n", i)
			}
			_, err = svc.Import(ctx, domain.User{}, strings.NewReader(many.String()))
			if probs := domain.ErrorProblems(err); len(probs) != 101 || probs[100] != "… and 200 more problems" {
				t.Errorf("300 bad rows: %d problems, last %q", len(probs), probs[len(probs)-1])
			}
			// A header without a login column, an unknown column.
			_, err = svc.Import(ctx, domain.User{}, strings.NewReader("name,shoe_size\nAda,38\n"))
			if probs := domain.ErrorProblems(err); len(probs) != 2 {
				t.Errorf("bad header: %v", err)
			}
			// A runner account is never changed by a roster.
			_, err = svc.Import(ctx, domain.User{}, strings.NewReader("student_number,section\nr1,A\n"))
			if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), "runner") {
				t.Errorf("roster naming a runner: %v", err)
			}
			if u, _ := db.UserByName(ctx, "r1"); u.Role != domain.RoleRunner || u.Section != "" {
				t.Errorf("runner changed: %+v", u)
			}
			// An admin cannot demote themselves by roster.
			boss, _, _ := db.CreateUser(ctx, "boss", domain.RoleAdmin)
			_, err = svc.Import(ctx, boss, strings.NewReader("student_number,role\nboss,learner\n"))
			if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), "your own role") {
				t.Errorf("self-demotion: %v", err)
			}
			if _, err := svc.Import(ctx, boss, strings.NewReader("student_number,role,section\nboss,admin,Staff\n")); err != nil {
				t.Errorf("an admin's own row keeping the role: %v", err)
			}
			if _, err := svc.Import(ctx, boss, strings.NewReader("student_number\nboss\n")); err != nil {
				t.Errorf("an admin's own row in a roster without roles: %v", err)
			}
		})
	}
}

// TestRosterKeepsColumnsItDoesNotHave: a roster without a section, name
// or role column leaves those of the learners it lists as they are (it
// used to clear every section and make everyone a learner); a column the
// file has, even empty, is what it says.
func TestRosterKeepsColumnsItDoesNotHave(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			svc := &accounts.Rosters{DB: db}
			if _, err := svc.Import(ctx, domain.User{}, strings.NewReader("name,student_number,section,role\nAda Li,S1,Red,learner\nTan,T1,Staff,instructor\n")); err != nil {
				t.Fatal(err)
			}
			res, err := svc.Import(ctx, domain.User{}, strings.NewReader("student_number,email\nS1,s1@example.edu\nT1,t1@example.edu\nS2,s2@example.edu\n"))
			if err != nil || len(res.Created) != 1 || res.Unchanged != 2 || len(res.Updated) != 0 {
				t.Fatalf("a roster of logins only: %+v %v, want S2 created and the others unchanged", res, err)
			}
			ada, _ := db.UserByName(ctx, "S1")
			tan, _ := db.UserByName(ctx, "T1")
			if ada.Section != "Red" || ada.FullName != "Ada Li" || tan.Role != domain.RoleInstructor || tan.Section != "Staff" {
				t.Errorf("kept columns changed: ada %+v, tan %+v", ada, tan)
			}
			if _, err := svc.Import(ctx, domain.User{}, strings.NewReader("student_number,section\nS1,\n")); err != nil {
				t.Fatal(err)
			}
			if ada, _ = db.UserByName(ctx, "S1"); ada.Section != "" || ada.FullName != "Ada Li" {
				t.Errorf("an empty section cell: %+v, want the section cleared and the name kept", ada)
			}
		})
	}
}

// TestTokensCSVIsFormulaSafe: a name a spreadsheet would run is quoted.
func TestTokensCSVIsFormulaSafe(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_ = accounts.WriteTokens(&out, []domain.RosterToken{{RosterEntry: domain.RosterEntry{Name: "1", FullName: "=HYPERLINK(\"x\")", Role: domain.RoleLearner}, Token: "npg_x"}})
	if !strings.Contains(out.String(), `'=HYPERLINK`) {
		t.Errorf("tokens CSV: %s", out.String())
	}
}
