package archtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPackagesAreAggregates: the middle is cut by aggregate (jobs, grade,
// policy, accounts, reference, intake, envprobe), a feature a file in one;
// none of the per-feature packages it was once cut into comes back.
func TestPackagesAreAggregates(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for old, now := range map[string]string{
		"queue": "jobs", "dispatch": "jobs", "appeal": "grade", "extension": "grade",
		"feedback": "policy", "refreview": "reference", "roster": "accounts", "authguard": "accounts",
		"submission": "intake", "npudevice": "envprobe",
	} {
		if _, err := os.Stat(filepath.Join(root, "internal", old)); err == nil {
			t.Errorf("internal/%s exists: its code belongs in internal/%s", old, now)
		}
		if _, err := os.Stat(filepath.Join(root, "internal", now)); err != nil {
			t.Errorf("internal/%s: %v", now, err)
		}
	}
}
