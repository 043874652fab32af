package exercise_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/exercise"
)

// TestLoadImportsNbgraderAnswer: an answer without metadata.grader is
// graded through the importer, and bad policy keys are all reported.
func TestLoadImportsNbgraderAnswer(t *testing.T) {
	t.Parallel()
	nb, err := os.ReadFile("../importer/testdata/nbgrader_release.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		config  string
		wantErr bool
	}{
		{name: "plain", config: `{"id": "nb", "title": "t", "starter": "s.ipynb", "answer": "a.ipynb", "policy": "latest", "max_submissions": 3,
			"rate_limit": {"count": 2, "per": "10m"}, "points": {"test_squares": 4}, "visibility": {"test_squares": "after_due_date"},
			"deadline": "2026-06-01T00:00:00Z", "late_penalty": [{"after": "0s", "multiplier": 0.5}]}`},
		{name: "bad policy keys", wantErr: true, config: `{"id": "nb", "title": "t", "starter": "s.ipynb", "answer": "a.ipynb", "policy": "worst",
			"points": {"nope": 1}, "visibility": {"test_squares": "secret"}, "late_penalty": [{"after": "1h", "multiplier": 2}], "rate_limit": {"count": 0, "per": "1m"}}`},
		{name: "unknown key", wantErr: true, config: `{"id": "nb", "title": "t", "starter": "s.ipynb", "answer": "a.ipynb", "max_attempt": 3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			exDir, ansDir := filepath.Join(root, "nb"), filepath.Join(root, "ans")
			_ = os.MkdirAll(exDir, 0o755)
			_ = os.MkdirAll(ansDir, 0o755)
			_ = os.WriteFile(filepath.Join(exDir, "exercise.json"), []byte(tt.config), 0o644)
			_ = os.WriteFile(filepath.Join(ansDir, "a.ipynb"), nb, 0o644)
			ex, err := exercise.LoadOne(exDir, ansDir)
			if tt.wantErr {
				if err == nil {
					t.Fatal("loaded a broken config")
				}
				if tt.name == "bad policy keys" {
					if n := strings.Count(err.Error(), "\t* "); n < 5 {
						t.Errorf("want every problem at once, got %d: %v", n, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ex.Graded) != 1 || ex.Graded[0].ID != "test_squares" || ex.Graded[0].Points != 4 || ex.Graded[0].Visibility != "after_due_date" {
				t.Errorf("graded %+v", ex.Graded)
			}
			if ex.Counts != "latest" || ex.MaxSubmissions != 3 || ex.RateLimit.Count != 2 {
				t.Errorf("policy %+v", ex.Policy)
			}
		})
	}
}
