package lti

import (
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
)

// TestRoleAndLogin: LIS roles (full URIs and the simple names LTI 1.3
// allows) map to the cohort role; a user's name is the sourcedid, else
// Moodle's user name, else the e-mail, never an unset variable.
func TestRoleAndLogin(t *testing.T) {
	t.Parallel()
	for roles, want := range map[string]domain.Role{
		"http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor":                   domain.RoleInstructor,
		"http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant": domain.RoleInstructor,
		"http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper":             domain.RoleInstructor,
		"Instructor": domain.RoleInstructor,
		"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner":            domain.RoleLearner,
		"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor": domain.RoleLearner, // an institution role says nothing of this course
		"http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor":             domain.RoleLearner,
		"": domain.RoleLearner,
	} {
		if got := Role([]string{roles}); got != want {
			t.Errorf("Role(%q) = %s, want %s", roles, got, want)
		}
	}
	c := launchClaims{Issuer: "https://lms", Subject: "42", Email: "a@b.edu"}
	c.LIS.PersonSourcedID = "$Person.sourcedId"
	if got := c.login(); got != "a@b.edu" {
		t.Errorf("unset sourcedid: %q", got)
	}
	c.Ext.UserUsername = "moodleuser"
	if got := c.login(); got != "moodleuser" {
		t.Errorf("Moodle user name: %q", got)
	}
	c.LIS.PersonSourcedID = "2026001"
	if got := c.login(); got != "2026001" {
		t.Errorf("sourcedid: %q", got)
	}
	if got := (launchClaims{Issuer: "https://lms", Subject: "42"}).login(); got != "lti-"+shortHash("https://lms", "42") {
		t.Errorf("nothing but sub: %q", got)
	}
}

// TestServicePath: /scores goes before a line item URL's query (Moodle's
// carry ?type_id=).
func TestServicePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://moodle/mod/lti/services.php/2/lineitems/5/lineitem?type_id=1": "https://moodle/mod/lti/services.php/2/lineitems/5/lineitem/scores?type_id=1",
		"https://canvas/api/lti/courses/3/line_items/1":                        "https://canvas/api/lti/courses/3/line_items/1/scores",
		"https://canvas/api/lti/courses/3/line_items/1/":                       "https://canvas/api/lti/courses/3/line_items/1/scores",
	} {
		if got := servicePath(in, "/scores"); got != want {
			t.Errorf("servicePath(%q) = %q, want %q", in, got, want)
		}
	}
}
