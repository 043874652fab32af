package main

import (
	"path/filepath"
	"testing"
)

// TestCLIServerWithoutScheme: `submit --server 127.0.0.1:8080` used to
// panic with a stack trace. Every command that takes --server refuses a
// value that is not an http(s) URL with a usage error naming the URL it
// probably meant.
func TestCLIServerWithoutScheme(t *testing.T) {
	t.Parallel()
	nb := filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")
	for _, c := range []struct{ server, mention string }{
		{"127.0.0.1:8080", "e.g. --server http://127.0.0.1:8080"},
		{"localhost:8080", "e.g. --server http://localhost:8080"},
		{"grader.campus.edu", "e.g. --server http://grader.campus.edu"},
		{"ftp://grader.campus.edu", "must be an http:// or https:// URL"},
		{"http://", "must be an http:// or https:// URL"},
	} {
		wantUsageError(t, c.mention, "submit", "--server", c.server, "--token", "x", "--exercise", "ch1", nb)
		wantUsageError(t, c.mention, "runner", "--server", c.server, "--token", "x")
	}
}
