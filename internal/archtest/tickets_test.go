package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ticketRef is a reference to a ticket ("issue 18", "Issue 3"): code and
// docs say what they do, not which ticket asked for it.
var ticketRef = regexp.MustCompile(`(?i)\bissues? #?\d+\b`)

// TestNoTicketNumbersInShippedText: no shipped Go file (tests aside), nor
// the README, docs/, scripts/, the Makefile or api/openapi.yaml, names an
// issue by its number.
func TestNoTicketNumbersInShippedText(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	paths := []string{"README.md", "api/openapi.yaml", "Makefile"}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	scripts, _ := filepath.Glob(filepath.Join(root, "scripts", "*.sh"))
	docs = append(docs, scripts...)
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		paths = append(paths, filepath.ToSlash(rel))
	}
	for _, f := range sources(t, 0) {
		if !f.test {
			paths = append(paths, f.path)
		}
	}
	if len(paths) < 100 {
		t.Fatalf("only %d files to read: the walk is broken", len(paths))
	}
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := ticketRef.FindString(line); m != "" {
				t.Errorf("%s:%d names a ticket (%q): say what the code does instead", p, i+1, m)
			}
		}
	}
}
