package similarity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func docs(t testing.TB) []Doc {
	t.Helper()
	var out []Doc
	for _, name := range []string{"a", "b", "c", "d"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".py"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Doc{SubmissionID: "sub-" + name, Learner: name, Source: string(b)})
	}
	return out
}

func TestTokenizeNormalizes(t *testing.T) {
	t.Parallel()
	a := tokenize("total += values[i - 1]  # a comment\ns = 'it''s'\n")
	b := tokenize("acc += xs[k - 2]\nq = \"x\" 'y'")
	if texts(a) != texts(b) || texts(a) != "V += V [ V - N ] V = S S" {
		t.Errorf("%q vs %q", texts(a), texts(b))
	}
	if a[len(a)-1].line != 2 {
		t.Errorf("line of the last token: %d", a[len(a)-1].line)
	}
	// Hostile input: unterminated strings, lone bytes, deep nesting.
	for _, src := range []string{"'''never closed", "\"x", "\xff\xfe(" + strings.Repeat("[", 10000), "r'\\'"} {
		_ = winnow(kgrams(tokenize(src)))
	}
}

func texts(ts []token) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.text)
	}
	return strings.Join(s, " ")
}

func TestWinnowGuarantee(t *testing.T) {
	t.Parallel()
	// Any shared run of W+K-1 hashes shares a fingerprint, wherever it sits.
	shared := []uint64{91, 14, 77, 3, 58, 23, 64, 42, 18}
	a := append([]uint64{5, 99, 1}, shared...)
	b := append(append([]uint64{70, 2}, shared...), 0, 8)
	fa, fb := map[uint64]bool{}, map[uint64]bool{}
	for _, f := range winnow(a) {
		fa[f.hash] = true
	}
	for _, f := range winnow(b) {
		fb[f.hash] = true
	}
	common := 0
	for h := range fa {
		if fb[h] {
			common++
		}
	}
	if common == 0 {
		t.Errorf("no shared fingerprint: %v %v", fa, fb)
	}
}

// TestRenamedCopyTopsTheReport: a copy with renamed variables, other
// comments and quotes tops the report; honest solutions of the same task
// are not reported.
func TestRenamedCopyTopsTheReport(t *testing.T) {
	t.Parallel()
	rep := Compare("ex", "def describe(series):\n    pass\n", docs(t), Options{})
	if len(rep.Pairs) == 0 {
		t.Fatalf("no pair reported: %+v", rep)
	}
	top := rep.Pairs[0]
	if top.A.Learner != "a" || top.B.Learner != "b" || top.Score < 0.8 {
		t.Errorf("top pair %s–%s %.2f, want a–b above 0.8", top.A.Learner, top.B.Learner, top.Score)
	}
	for _, p := range rep.Pairs[1:] {
		t.Errorf("honest pair reported: %s–%s %.2f (%d shared)", p.A.Learner, p.B.Learner, p.Score, p.Shared)
	}
	if len(top.Fragments) == 0 || !strings.Contains(top.Fragments[0].AText, "total += value") || !strings.Contains(top.Fragments[0].BText, "acc += v") {
		t.Errorf("fragments: %+v", top.Fragments)
	}
	if rep.MedianScore >= 0.5 {
		t.Errorf("median %.2f", rep.MedianScore)
	}
}

// TestStarterCodeIsIgnored: code everyone was given matches nothing.
func TestStarterCodeIsIgnored(t *testing.T) {
	t.Parallel()
	given := "def helper(table, key):\n    rows = [r for r in table if r[0] == key]\n    return sorted(rows, key=lambda r: r[1])[:10]\n"
	ds := []Doc{{SubmissionID: "1", Learner: "x", Source: given + "y = 1\n"}, {SubmissionID: "2", Learner: "y", Source: given + "z = [q * 2 for q in range(3)]\n"}}
	if rep := Compare("ex", "", ds, Options{}); len(rep.Pairs) != 1 {
		t.Fatalf("without the starter the given code matches: %+v", rep.Pairs)
	}
	if rep := Compare("ex", given, ds, Options{}); len(rep.Pairs) != 0 || rep.Ignored == 0 {
		t.Errorf("the starter's code was compared: %+v", rep)
	}
}
