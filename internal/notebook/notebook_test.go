package notebook_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
)

const answer = `{
 "nbformat": 4, "nbformat_minor": 5,
 "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "grader": {"compare": "tokens"}},
 "cells": [
  {"id": "intro", "cell_type": "markdown", "metadata": {}, "source": ["# 练习\n"]},
  {"id": "impl", "cell_type": "code", "metadata": {"grader": {"id": "q1-impl", "solution": true}}, "outputs": [], "execution_count": null,
   "source": ["def f(x):\n", "    ### BEGIN SOLUTION\n", "    return x + 1\n", "    ### END SOLUTION\n"]},
  {"id": "check", "cell_type": "code", "metadata": {"grader": {"id": "q1", "points": 2, "compare": "tokens", "sanitize": [{"regex": "0x[0-9a-f]+", "replace": "ADDR"}]}}, "outputs": [], "execution_count": null,
   "source": "print(f(1))"},
  {"id": "quiz", "cell_type": "code", "metadata": {"grader": {"id": "q2", "points": 1, "solution": true, "starter": "q2 = None"}}, "outputs": [], "execution_count": null,
   "source": "q2 = \"√\"\nprint(q2)"},
  {"id": "probe", "cell_type": "code", "metadata": {"grader": {"id": "p1", "probe": true}}, "outputs": [], "execution_count": null, "source": "print(f(41))"}
 ]
}`

func mustParse(t *testing.T, s string) *notebook.Notebook {
	t.Helper()
	nb, err := notebook.Parse([]byte(s), notebook.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"not json", "not json", []string{"not valid JSON"}},
		{"nbformat 3", `{"nbformat": 3, "nbformat_minor": 0, "cells": []}`, []string{"nbformat 3"}},
		{"several", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
			{"cell_type": "weird", "id": "a", "metadata": {}, "source": ""},
			{"cell_type": "code", "metadata": {}, "source": "", "outputs": []},
			{"cell_type": "code", "id": "a", "metadata": {"grader": {"id": "bad id!"}}, "source": "", "outputs": [{"output_type": "nope"}]}]}`,
			[]string{"unknown cell_type", "same id", "unknown output_type", "grader.id"}},
		{"deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), []string{"nested deeper"}},
		{"invalid utf8", "{\"a\": \"\xff\"}", []string{"UTF-8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := notebook.Parse([]byte(tc.doc), notebook.Limits{})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	_, err := notebook.Parse(make([]byte, 2000), notebook.Limits{MaxBytes: 1000})
	if !errors.Is(err, notebook.ErrTooLarge) {
		t.Fatalf("size limit: %v", err)
	}
}

func TestSourceStringOrList(t *testing.T) {
	t.Parallel()
	nb := mustParse(t, answer)
	if got := string(nb.Cells[1].Source); got != "def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n" {
		t.Fatalf("list source joined to %q", got)
	}
	b, err := notebook.Encode(nb)
	if err != nil {
		t.Fatal(err)
	}
	again := mustParse(t, string(b))
	if again.Cells[2].Source != nb.Cells[2].Source || again.Cells[2].Outputs == nil {
		t.Fatal("round trip changed the notebook or dropped code-cell outputs")
	}
	if !strings.Contains(string(b), `"execution_count": null`) {
		t.Fatal("code cells must carry execution_count")
	}
}

func TestStarter(t *testing.T) {
	t.Parallel()
	st, err := notebook.Starter(mustParse(t, answer))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := notebook.Encode(st)
	s := string(b)
	for _, leak := range []string{"return x + 1", "√", "print(f(41))", "sanitize", "0x[0-9a-f]"} {
		if strings.Contains(s, leak) {
			t.Errorf("starter leaks %q", leak)
		}
	}
	if !strings.Contains(s, "    # YOUR CODE HERE") || !strings.Contains(s, "q2 = None") {
		t.Errorf("starter lacks the placeholders:\n%s", s)
	}
	if len(st.Cells) != 4 {
		t.Errorf("the probe cell should be dropped: %d cells", len(st.Cells))
	}
	if g := st.Cells[2].MustGrader(); g.ID != "q1" || g.Points != 2 {
		t.Errorf("graded metadata lost: %+v", g)
	}
}

func TestRebuild(t *testing.T) {
	t.Parallel()
	ans := mustParse(t, answer)
	learner := func(edit func(nb *notebook.Notebook)) *notebook.Notebook {
		st, _ := notebook.Starter(ans)
		edit(st)
		return st
	}
	t.Run("SolutionTakenLockedFromTemplateOutputsDropped", func(t *testing.T) {
		t.Parallel()
		up := learner(func(nb *notebook.Notebook) {
			nb.Cells[1].Source = "def f(x):\n    return x * 2\n"
			nb.Cells[2].Outputs = []*notebook.Output{{OutputType: "stream", Name: "stdout", Text: "2\n"}}
		})
		got, integ, err := notebook.Rebuild(ans, up)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Cells[1].Source) != "def f(x):\n    return x * 2\n" {
			t.Error("learner's solution not taken")
		}
		if len(got.Cells[2].Outputs) != 0 {
			t.Error("uploaded outputs were kept")
		}
		if len(integ.Verdicts) != 0 {
			t.Errorf("unexpected integrity verdicts %v", integ.Verdicts)
		}
	})
	t.Run("EditedLockedCellIsTampered", func(t *testing.T) {
		t.Parallel()
		up := learner(func(nb *notebook.Notebook) { nb.Cells[2].Source = "print(2)" })
		got, integ, _ := notebook.Rebuild(ans, up)
		if integ.Verdicts["q1"] != domain.VerdictTampered {
			t.Errorf("verdicts %v", integ.Verdicts)
		}
		if string(got.Cells[2].Source) != "print(f(1))" {
			t.Error("the edited locked cell was executed")
		}
	})
	t.Run("DeletedGradedCellIsMissing", func(t *testing.T) {
		t.Parallel()
		up := learner(func(nb *notebook.Notebook) { nb.Cells = append(nb.Cells[:2], nb.Cells[3:]...) })
		got, integ, _ := notebook.Rebuild(ans, up)
		if integ.Verdicts["q1"] != domain.VerdictMissing || len(got.Cells) != len(ans.Cells) {
			t.Errorf("verdicts %v, %d cells", integ.Verdicts, len(got.Cells))
		}
	})
	t.Run("TrailingWhitespaceIsNotTampering", func(t *testing.T) {
		t.Parallel()
		up := learner(func(nb *notebook.Notebook) { nb.Cells[2].Source = "print(f(1))  \r\n" })
		_, integ, _ := notebook.Rebuild(ans, up)
		if len(integ.Verdicts) != 0 {
			t.Errorf("verdicts %v", integ.Verdicts)
		}
	})
}

// FuzzParse: no input makes the validator panic or allocate without bound.
func FuzzParse(f *testing.F) {
	f.Add([]byte(answer))
	f.Add([]byte(`{"nbformat":4,"nbformat_minor":5,"cells":[{"cell_type":"code","source":[1]}]}`))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		nb, err := notebook.Parse(b, notebook.Limits{MaxBytes: 1 << 20})
		if err == nil {
			if _, err := notebook.Encode(nb); err != nil {
				t.Fatalf("a parsed notebook does not encode: %v", err)
			}
			if _, err := notebook.Starter(nb); err != nil {
				return
			}
		}
	})
}

// TestLearnerCopyKeepsNoGradingRules: the learner's executed notebook is
// rebuilt from the answer, so its locked cells carry the answer's grader
// metadata (rules, explanations); the learner's copy keeps what the
// starter keeps, nothing more.
func TestLearnerCopyKeepsNoGradingRules(t *testing.T) {
	t.Parallel()
	ans := mustParse(t, answer)
	st, err := notebook.Starter(ans)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, _, err := notebook.Rebuild(ans, st)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := notebook.Encode(rebuilt); !strings.Contains(string(b), "sanitize") {
		t.Fatal("the fixture's answer has no grading rule to redact")
	}
	cp := notebook.LearnerCopy(rebuilt, func(string) bool { return true })
	b, _ := notebook.Encode(cp)
	for _, leak := range []string{"sanitize", "compare", "feedback"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the learner's copy holds %q:\n%s", leak, b)
		}
	}
	if g := cp.Cells[2].MustGrader(); g.ID != "q1" || g.Points != 2 {
		t.Errorf("ids and points lost: %+v", g)
	}
}
