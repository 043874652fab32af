package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestUserImportCLI: `npugrade user import` imports a roster of 500 in one
// call and prints the new users' tokens once as CSV; a second run creates
// nobody; a bad roster reports every bad row (exit 2) and imports nothing;
// --tokens writes a new 0600 file and never overwrites one.
func TestUserImportCLI(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := storetest.URL(t, d)
			dir := t.TempDir()
			var b strings.Builder
			b.WriteString("Name,Student Number,Section,Role\n")
			for i := range 500 {
				fmt.Fprintf(&b, "Learner %d,S%03d,%c,\n", i, i, 'A'+i%3)
			}
			good := filepath.Join(dir, "roster.csv")
			if err := os.WriteFile(good, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := run(ctx, []string{"user", "import", good, "--db", dbURL}, &out, &errb); code != 0 {
				t.Fatalf("import: exit %d: %s", code, errb.String())
			}
			recs, err := csv.NewReader(&out).ReadAll()
			if err != nil || len(recs) != 501 || !strings.HasPrefix(recs[1][4], "npg_") || recs[1][0] != "S000" {
				t.Fatalf("tokens CSV: %d rows %v", len(recs), err)
			}
			if !strings.Contains(errb.String(), "500 created, 0 updated, 0 unchanged") {
				t.Errorf("summary: %s", errb.String())
			}
			out.Reset()
			errb.Reset()
			tokens := filepath.Join(dir, "tokens.csv")
			if code := run(ctx, []string{"user", "import", "--tokens", tokens, good, "--db", dbURL}, &out, &errb); code != 0 {
				t.Fatalf("re-import: exit %d: %s", code, errb.String())
			}
			st, err := os.Stat(tokens)
			if err != nil || st.Mode().Perm() != 0o600 || !strings.Contains(errb.String(), "0 created, 0 updated, 500 unchanged") || out.Len() != 0 {
				t.Errorf("re-import: %v %v %q stdout %q", st, err, errb.String(), out.String())
			}
			if code := run(ctx, []string{"user", "import", "--tokens", tokens, good, "--db", dbURL}, &out, &errb); code != 2 {
				t.Errorf("--tokens over an existing file: exit %d", code)
			}

			bad := filepath.Join(dir, "bad.csv")
			_ = os.WriteFile(bad, []byte("name,student_number,section,role\nX,T1,A,learner\nY,,A,learner\nZ,T3,A,overlord\nW,T1,B,learner\n"), 0o644)
			out.Reset()
			errb.Reset()
			if code := run(ctx, []string{"user", "import", bad, "--db", dbURL}, &out, &errb); code != 2 {
				t.Errorf("bad roster: exit %d", code)
			}
			for _, want := range []string{"3 problem(s)", "line 3:", "line 4:", "line 5:", "also on line 2"} {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("bad roster: stderr lacks %q: %s", want, errb.String())
				}
			}
			out.Reset()
			if code := run(ctx, []string{"user", "list", "--db", dbURL}, &out, &errb); code != 0 || strings.Count(out.String(), "\n") != 500 {
				t.Errorf("users after a bad roster: %d lines", strings.Count(out.String(), "\n"))
			}
			if code := run(ctx, []string{"user", "import", "--db", dbURL}, &out, &errb); code != 2 {
				t.Errorf("import without a file: exit %d", code)
			}
		})
	}
}
