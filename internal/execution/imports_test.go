package execution_test

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestNoIsolationBackendImported: the executor reaches its isolation only
// through domain.Isolation, so another backend needs no change here. The
// package's own files (tests may use the sandbox as a real part) import no
// backend.
func TestNoIsolationBackendImported(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasSuffix(p, "/internal/sandbox") {
				t.Errorf("%s imports %s: use domain.Isolation", e.Name(), p)
			}
		}
	}
	if checked < 3 {
		t.Fatalf("checked %d files: the walk is broken", checked)
	}
}
