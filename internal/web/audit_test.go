package web_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestAuditLog: sign-ins (and a refused one), a user created and a token
// revoked from the admin pages land in the audit log with who did them;
// the admin page lists them newest first; learners may not open it.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			admin := e.user(t, "root", domain.RoleAdmin)
			learner := e.user(t, "ada", domain.RoleLearner)
			ac, lc, bad := client(), client(), client()
			do(t, bad, "POST", e.srv.URL+"/login", url.Values{"token": {"npg_wrong"}}, nil)
			e.signIn(t, ac, admin)
			e.signIn(t, lc, learner)
			_, body := do(t, ac, "GET", e.srv.URL+"/admin/users", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if m == nil {
				t.Fatal("no CSRF token on the users page")
			}
			if resp, _ := do(t, ac, "POST", e.srv.URL+"/admin/users", url.Values{"csrf": {m[1]}, "name": {"grace"}, "role": {"instructor"}}, nil); resp.StatusCode != 201 {
				t.Fatalf("create user: %d", resp.StatusCode)
			}
			ctx := context.Background()
			u, _ := e.db.UserByName(ctx, "ada")
			all, err := e.db.Tokens(ctx)
			var toks []domain.TokenInfo
			for _, tk := range all {
				if tk.UserID == u.ID {
					toks = append(toks, tk)
				}
			}
			if err != nil || len(toks) == 0 {
				t.Fatalf("tokens of ada: %v %v", toks, err)
			}
			if resp, _ := do(t, ac, "POST", e.srv.URL+"/admin/tokens/"+strconv.FormatInt(toks[0].ID, 10)+"/revoke", url.Values{"csrf": {m[1]}}, nil); resp.StatusCode != 303 {
				t.Fatalf("revoke: %d", resp.StatusCode)
			}

			events, err := e.db.AuditEvents(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range events {
				got = append(got, ev.Actor+" "+ev.Action+" "+ev.Subject)
			}
			want := []string{"root token-revoked token " + strconv.FormatInt(toks[0].ID, 10), "root user-created grace", "ada login ada", "root login root", "anonymous login-failed "}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("audit log\n got %q\nwant %q", got, want)
			}
			if events[1].Detail != "role instructor" {
				t.Errorf("user-created detail %q", events[1].Detail)
			}
			resp, page := do(t, ac, "GET", e.srv.URL+"/admin/audit", nil, nil)
			if resp.StatusCode != 200 || !strings.Contains(page, "user-created") || !strings.Contains(page, "grace") ||
				strings.Index(page, "token-revoked") > strings.Index(page, "user-created") {
				t.Errorf("audit page: %d", resp.StatusCode)
			}
			other, oc := e.user(t, "cy", domain.RoleLearner), client()
			e.signIn(t, oc, other)
			if resp, _ := do(t, oc, "GET", e.srv.URL+"/admin/audit", nil, nil); resp.StatusCode != 403 {
				t.Errorf("learner on the audit page: %d", resp.StatusCode)
			}
		})
	}
}
