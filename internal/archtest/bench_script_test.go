package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchScriptNamesRealBenchmarks: every `go test -bench` line of
// scripts/bench.sh names a package that exists and a pattern that
// selects at least one of its benchmarks. A package moved or a benchmark
// renamed otherwise breaks `make bench` long after the move (it did:
// the script named internal/queue and internal/roster after both had
// moved).
func TestBenchScriptNamesRealBenchmarks(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	script, err := os.ReadFile(filepath.Join(root, "scripts", "bench.sh"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`go test .*-bench '?([^' ]+)'? .*?(\./[\w/.-]+)/`)
	decl := regexp.MustCompile(`(?m)^func (Benchmark\w*)\(b \*testing\.B\)`)
	checked := 0
	for _, l := range strings.Split(string(script), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		checked++
		pattern, dir := m[1], filepath.Join(root, filepath.FromSlash(m[2]))
		re, err := regexp.Compile(pattern)
		if err != nil {
			t.Errorf("bench.sh: -bench %q: %v", pattern, err)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if len(files) == 0 {
			t.Errorf("bench.sh: %s has no test files (moved?)", m[2])
			continue
		}
		found := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range decl.FindAllStringSubmatch(string(b), -1) {
				found = found || re.MatchString(d[1])
			}
		}
		if !found {
			t.Errorf("bench.sh: -bench %q selects no benchmark in %s", pattern, m[2])
		}
	}
	if checked < 10 {
		t.Fatalf("only %d go test -bench lines read in scripts/bench.sh: the pattern is broken", checked)
	}
}
