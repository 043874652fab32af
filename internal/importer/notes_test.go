package importer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/importer"
)

// TestNotesIn: the notes worded by fmt.Sprintf are Notes, byte for byte,
// and worded by other words each note's sentence, and the sentence
// inside it (an autograder test's "passes when ..."), is theirs, the
// cells' ids left as they are.
func TestNotesIn(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"testdata/nbgrader/source.ipynb", "testdata/nbval_papermill.ipynb", "testdata/otter/demo.ipynb"} {
		_, rep, err := importer.Import(readNotebook(t, path))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(rep.Notes) == 0 {
			t.Fatalf("%s: no notes", path)
		}
		if got := rep.NotesIn(fmt.Sprintf); strings.Join(got, "\n") != strings.Join(rep.Notes, "\n") {
			t.Errorf("%s: notes in English\n%s\nwant\n%s", path, strings.Join(got, "\n"), strings.Join(rep.Notes, "\n"))
		}
		marked := rep.NotesIn(func(format string, a ...any) string { return "«" + fmt.Sprintf(format, a...) + "»" })
		for i, n := range marked {
			if !strings.HasPrefix(n, "«") || !strings.HasSuffix(n, "»") || strings.Trim(n, "«»") == "" {
				t.Errorf("%s: note %q not worded by the words given (English %q)", path, n, rep.Notes[i])
			}
		}
		if path == "testdata/nbgrader/source.ipynb" && !strings.Contains(strings.Join(marked, "\n"), "graded cell, «passes when it raises nothing") {
			t.Errorf("%s: the autograder note's own sentence not worded:\n%s", path, strings.Join(marked, "\n"))
		}
	}
}
