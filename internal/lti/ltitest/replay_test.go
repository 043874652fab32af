package ltitest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/lti"
	"github.com/npugrade/npugrade/internal/lti/ltitest"
)

// fixture reads a replayed claim set (testdata/README.md says where each
// comes from) with fresh iat and exp.
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c["iat"], c["exp"] = time.Now().Unix(), time.Now().Add(5*time.Minute).Unix()
	return c
}

// platformOf makes the test platform the fixture's: its issuer, client
// id (aud, or azp) and deployment id.
func platformOf(c map[string]any) func(*ltitest.Platform) {
	return func(p *ltitest.Platform) {
		p.Issuer = c["iss"].(string)
		switch aud := c["aud"].(type) {
		case string:
			p.ClientID = aud
		case []any:
			p.ClientID = fmt.Sprint(c["azp"])
		}
		p.DeploymentID = c[lti.ClaimDeploymentID].(string)
	}
}

// TestReplayedLaunches: the claim sets of real Canvas and Moodle
// launches and of the IMS Deep Linking example, re-signed by the test
// platform, are accepted: each user gets the role the claims say in the
// course's cohort, under the name npugrade derives (Canvas's LIS
// sourcedid, Moodle's user name, else the e-mail), and lands where the
// message leads.
func TestReplayedLaunches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		fixtures []string
		logins   []string
		roles    []domain.Role
		paths    []string
		course   string
	}{
		{[]string{"canvas-teacher", "canvas-student"}, []string{"7858675309", "835203884"},
			[]domain.Role{domain.RoleInstructor, domain.RoleLearner}, []string{"/dashboard", "/exercises"}, "LTI 1.3 Test Course"},
		{[]string{"moodle-instructor"}, []string{"admin"}, []domain.Role{domain.RoleInstructor}, []string{"/dashboard"}, "Curso 1"},
		{[]string{"ims-deep-linking-request"}, []string{"jane@example.org"}, []domain.Role{domain.RoleInstructor}, []string{"/lti/deep-link"},
			"Economics as a Social Science"},
	}
	for _, c := range cases {
		first := fixture(t, c.fixtures[0])
		e := newEnvWith(t, "sqlite", envOptions{platform: platformOf(first)})
		for i, name := range c.fixtures {
			l := e.plat.Launch(t, browser(t), e.ts.URL, fixture(t, name))
			if l.Response.StatusCode != http.StatusOK || l.Response.Request.URL.Path != c.paths[i] {
				t.Errorf("%s: %d at %s: %.300s", name, l.Response.StatusCode, l.Response.Request.URL, l.Body)
				continue
			}
			u, err := e.db.UserByName(ctx, c.logins[i])
			if err != nil {
				t.Errorf("%s: user %q: %v", name, c.logins[i], err)
				continue
			}
			ms, _ := e.db.CohortsOf(ctx, u.ID)
			found := false
			for _, m := range ms {
				found = found || (m.Cohort.Title == c.course && m.Role == c.roles[i] && strings.HasPrefix(m.Cohort.Slug, "lti-"))
			}
			if !found {
				t.Errorf("%s: %s is not %s of %q: %+v", name, c.logins[i], c.roles[i], c.course, ms)
			}
		}
	}
}
