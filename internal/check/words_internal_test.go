package check

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// marked words every sentence in «», verdicts in brackets and feedback
// in braces: what a reader's language would replace.
type marked struct{}

func (marked) F(format string, a ...any) string { return "«" + fmt.Sprintf(format, a...) + "»" }
func (marked) Verdict(v string) string          { return "[" + v + "]" }
func (marked) Feedback(msg string) string       { return "{" + msg + "}" }

// TestReportInWords: the summary in English is what check always printed,
// byte for byte (JUnit and the GitHub annotations carry it, and the
// tutorial CI reads it), and in other words every sentence, verdict and
// grader message of it is worded by them, the notebooks' and cells'
// names left as they are.
func TestReportInWords(t *testing.T) {
	t.Parallel()
	starter := Case{CellID: "q2", Got: domain.CellResult{Verdict: "pass", Counted: true}}
	starter.fail(found("the untouched starter passes this cell; the question gives its points away"))
	fixture := Case{CellID: "q1", Got: domain.CellResult{Verdict: "mismatch", Message: "stdout: differs", Observed: "5\n"}}
	fixture.fail(found("got %s, want %s: %s", Verdict("mismatch"), Verdict("pass"), Feedback("stdout: differs")))
	broken := &Notebook{Exercise: "bd", Kind: "fixture", Name: "late.ipynb"}
	broken.execFailed(found("%s: "+staleNoFresh, Feedback("no usable reference outputs: stale reference outputs"), "bd", "cpu"))
	rep := &Report{Profile: "cpu", Duration: 1500 * time.Millisecond, Notebooks: []*Notebook{
		{Exercise: "bd", Kind: "starter", Name: "s.ipynb", Score: 1, Max: 2, Cases: []Case{starter}},
		{Exercise: "bd", Kind: "fixture", Name: "wrong.ipynb", Score: 1, Max: 2, Cases: []Case{fixture}},
		broken,
	}}
	rc := &References{Exercise: "bd", Profile: "cpu", Stale: true, Changed: []string{"q1", "q3 (no longer graded)"}}
	if err := settle(rc, nil, nil, rep.Notebooks, Options{}); err != nil {
		t.Fatal(err)
	}
	rep.References = []*References{rc}
	var en, up bytes.Buffer
	rep.Summary(&en)
	rep.SummaryIn(&up, marked{})
	want := `EXERCISE  NOTEBOOK     KIND     SCORE  CASES  RESULT
bd        s.ipynb      starter  1/2    1      1 unexpected
bd        wrong.ipynb  fixture  1/2    1      1 unexpected
bd        late.ipynb   fixture  0/0    0      execution error

bd s.ipynb q2: the untouched starter passes this cell; the question gives its points away

bd wrong.ipynb q1: got mismatch, want pass: stdout: differs
    observed:
    5

bd late.ipynb: no usable reference outputs: stale reference outputs: the reference outputs of bd for profile "cpu" were recorded from another version of the answer, and the answer's fresh outputs could not be had

bd: the reference outputs for profile cpu were recorded from another version of the answer (they are stale); its notebooks above were graded against the answer's fresh outputs, which are not recorded.
  graded cells whose outputs changed: q1, q3 (no longer graded)
  graded against the fresh outputs, fixture wrong.ipynb and fixture late.ipynb now disagree with their expectations:
    fixture wrong.ipynb q1: got mismatch, want pass: stdout: differs
    fixture late.ipynb: no usable reference outputs: stale reference outputs: the reference outputs of bd for profile "cpu" were recorded from another version of the answer, and the answer's fresh outputs could not be had
  recording them (--update-reference) is not advised: fix the answer, or, when the change is intended, update the fixtures' expected verdicts (.expected.json) and check again.

3 notebooks checked on profile cpu in 1.5s
`
	if en.String() != want {
		t.Errorf("English summary:\n%s\nwant:\n%s", en.String(), want)
	}
	for _, w := range []string{"«EXERCISE  NOTEBOOK", "«starter»", "«1 unexpected»", "«execution error»",
		"bd s.ipynb q2: «the untouched starter passes this cell; the question gives its points away»",
		"bd wrong.ipynb q1: «got [mismatch], want [pass]: {stdout: differs}»", "    «observed:»\n    5",
		"bd late.ipynb: «{no usable reference outputs: stale reference outputs}: the reference outputs of bd",
		"«graded cells whose outputs changed: q1, «q3 (no longer graded)»»",
		"«graded against the fresh outputs, «fixture wrong.ipynb»« and »«fixture late.ipynb» now disagree with their expectations:»",
		"    ««fixture» wrong.ipynb q1: «got [mismatch], want [pass]: {stdout: differs}»»",
		"«recording them (--update-reference) is not advised", "«3 notebooks checked on profile cpu in 1.5s»"} {
		if !strings.Contains(up.String(), w) {
			t.Errorf("summary in other words lacks %q:\n%s", w, up.String())
		}
	}
}
