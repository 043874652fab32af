package check

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Summary writes the table printed at the end of a check, in English.
func (r *Report) Summary(w io.Writer) { r.SummaryIn(w, English) }

// SummaryIn writes the table printed at the end of a check in say's words.
func (r *Report) SummaryIn(w io.Writer, say Words) {
	say = wordsOr(say)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, say.F("EXERCISE\tNOTEBOOK\tKIND\tSCORE\tCASES\tRESULT"))
	for _, n := range r.Notebooks {
		failed := 0
		for _, c := range n.Cases {
			if c.Failure != "" {
				failed++
			}
		}
		res := say.F("as expected")
		if n.Kind == "notebook" {
			res = say.F("graded")
		}
		if n.ExecErr != "" {
			res = say.F("execution error")
		} else if failed > 0 {
			res = say.F("%d unexpected", failed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%d\t%s\n", n.Exercise, n.Name, kindIn(say, n.Kind), points(n.Score), points(n.Max), len(n.Cases), res)
	}
	tw.Flush()
	for _, n := range r.Notebooks {
		if n.ExecErr != "" {
			fmt.Fprintf(w, "\n%s %s: %s\n", n.Exercise, n.Name, n.execFinding().Say(say))
		}
		if n.Kind == "notebook" && n.ExecErr == "" {
			n.cells(w, say)
		}
		for _, c := range n.Cases {
			if c.Failure != "" {
				fmt.Fprintf(w, "\n%s %s %s: %s\n", n.Exercise, n.Name, c.CellID, c.failure(say))
				if c.Got.Diff != "" {
					fmt.Fprintln(w, indent(c.Got.Diff))
				} else if c.Got.Observed != "" {
					fmt.Fprintln(w, indent(say.F("observed:")+"\n"+c.Got.Observed))
				}
			}
		}
	}
	if len(r.Unstable) > 0 {
		fmt.Fprintf(w, "\n%s\n", say.F("cells whose outputs change between runs (they need a sanitizer or a tolerance): %s", strings.Join(r.Unstable, ", ")))
	}
	for _, ref := range r.References {
		fmt.Fprintf(w, "\n%s\n", ref.AdviceIn(say))
	}
	fmt.Fprintf(w, "\n%s\n", say.F("%d notebooks checked on profile %s in %.1fs", len(r.Notebooks), r.Profile, r.Duration.Seconds()))
}

// failure is what was not as expected in say's words.
func (c *Case) failure(say Words) string {
	if c.Finding.Format == "" {
		return say.Feedback(c.Failure)
	}
	return c.Finding.Say(say)
}

// cells lists a learner's notebook cell by cell, as its grade says, with
// the probe seed that reproduces it.
func (n *Notebook) cells(w io.Writer, say Words) {
	fmt.Fprintf(w, "\n%s %s %s: %s/%s\n", n.Exercise, n.Name, say.F("(probe seed %d)", n.Seed), points(n.Score), points(n.Max))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range n.Cases {
		if !c.Got.Counted {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s/%s\t%s\n", c.CellID, say.Verdict(c.Got.Verdict), points(c.Got.Points), points(c.Got.MaxPoints), firstLine(say.Feedback(c.Got.Message)))
	}
	tw.Flush()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Advice says, in English, what was found about the exercise's reference
// outputs, and whether to record the fresh ones.
func (r *References) Advice() string { return r.AdviceIn(English) }

// AdviceIn says in say's words what was found about the exercise's
// reference outputs, and whether to record the fresh ones: only when the
// answer and every fixture grade as expected against them.
func (r *References) AdviceIn(say Words) string {
	say = wordsOr(say)
	var b strings.Builder
	switch {
	case r.Recorded:
		b.WriteString(say.F("%s: recorded the answer's outputs as the reference outputs for profile %s.", r.Exercise, r.Profile))
	case r.Stale:
		b.WriteString(say.F("%s: the reference outputs for profile %s were recorded from another version of the answer (they are stale); its notebooks above were graded against the answer's fresh outputs, which are not recorded.", r.Exercise, r.Profile))
	default:
		b.WriteString(say.F("%s: the answer's fresh outputs for profile %s were checked before recording them.", r.Exercise, r.Profile))
	}
	switch {
	case r.Changed == nil:
	case len(r.Changed) == 0:
		b.WriteString("\n  " + say.F("graded cells whose outputs changed: none"))
	default:
		changed := make([]string, len(r.Changed))
		for i, c := range r.Changed {
			if id, ok := strings.CutSuffix(c, " (no longer graded)"); ok {
				c = say.F("%s (no longer graded)", id)
			}
			changed[i] = c
		}
		b.WriteString("\n  " + say.F("graded cells whose outputs changed: %s", strings.Join(changed, ", ")))
	}
	if r.Err != "" {
		b.WriteString("\n  " + say.F("the answer does not run as its reference must: %s\n  recording its outputs is not advised: fix the answer first.", say.Feedback(r.Err)))
		return b.String()
	}
	if !r.Safe() {
		who := disagreeing(r.Disagree, say)
		both := strings.Join(who, say.F(" and "))
		if len(who) == 1 {
			b.WriteString("\n  " + say.F("graded against the fresh outputs, %s now disagrees with its expectations:", both))
		} else {
			b.WriteString("\n  " + say.F("graded against the fresh outputs, %s now disagree with their expectations:", both))
		}
		for i, d := range r.Disagree {
			if len(r.disagree) == len(r.Disagree) {
				d = r.disagree[i].Say(say)
			}
			fmt.Fprintf(&b, "\n    %s", d)
		}
		if r.Update {
			b.WriteString("\n  " + say.F("NOT recorded: fix the answer, or, when the change is intended, update the fixtures' expected verdicts (.expected.json) and check again."))
		} else {
			b.WriteString("\n  " + say.F("recording them (--update-reference) is not advised: fix the answer, or, when the change is intended, update the fixtures' expected verdicts (.expected.json) and check again."))
		}
		return b.String()
	}
	if r.Stale && !r.Recorded {
		b.WriteString("\n  " + say.F("the answer and every fixture grade as expected against them: review the changed cells, then record them with npugrade check --profile %s --only %s --update-reference", r.Profile, r.Exercise))
	}
	return b.String()
}

// disagreeing names the notebooks of disagreements ("KIND NAME ..."), in
// order, once each: "the answer", "fixture wrong.ipynb".
func disagreeing(ds []string, say Words) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range ds {
		f := strings.Fields(d)
		if len(f) < 2 {
			continue
		}
		name := say.F("fixture %s", strings.TrimSuffix(f[1], ":"))
		if f[0] == "answer" {
			name = say.F("the answer")
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one <testsuite> per notebook and one <testcase> per
// graded cell, classname naming the exercise id.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Time: r.Duration.Seconds()}
	for _, n := range r.Notebooks {
		s := junitSuite{Name: n.Exercise + "/" + n.Name, Time: n.Duration.Seconds()}
		if n.ExecErr != "" {
			s.Cases = append(s.Cases, junitCase{Name: "execute", Classname: n.Exercise,
				Error: &junitMessage{Message: n.ExecErr, Type: "execution"}})
			s.Errors++
		}
		for _, c := range n.Cases {
			jc := junitCase{Name: c.CellID, Classname: n.Exercise, Time: n.Duration.Seconds() / float64(max(1, len(n.Cases)))}
			switch {
			case c.Failure != "":
				text := c.Failure
				if c.Got.Diff != "" {
					text += "\n" + c.Got.Diff
				} else if c.Got.Observed != "" {
					text += "\nobserved:\n" + c.Got.Observed
				}
				jc.Failure = &junitMessage{Message: c.Failure, Type: c.Got.Verdict, Text: text}
				s.Failures++
			case !c.Counted && c.Got.Verdict == "not-run":
				jc.Skipped = &junitMessage{Message: c.Got.Message}
				s.Skipped++
			}
			s.Cases = append(s.Cases, jc)
		}
		s.Tests = len(s.Cases)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, s)
	}
	for _, ref := range r.References {
		s := junitSuite{Name: ref.Exercise + "/references", Tests: 1}
		jc := junitCase{Name: "references " + ref.Profile, Classname: ref.Exercise}
		switch {
		case ref.Err != "":
			jc.Error, s.Errors = &junitMessage{Message: ref.Err, Type: "references", Text: ref.Advice()}, 1
		case !ref.Recorded:
			jc.Failure, s.Failures = &junitMessage{Message: "reference outputs stale or not recorded", Type: "references", Text: ref.Advice()}, 1
		}
		s.Cases = []junitCase{jc}
		out.Tests++
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteGitHub writes workflow-command annotations for each unexpected
// result, and a Markdown summary to $GITHUB_STEP_SUMMARY when set.
func (r *Report) WriteGitHub(w io.Writer) error {
	for _, n := range r.Notebooks {
		if n.ExecErr != "" {
			fmt.Fprintf(w, "::error file=%s,title=%s::%s\n", ghProp(n.Path), ghProp(n.Exercise+" execution error"), ghData(n.ExecErr))
		}
		for _, c := range n.Cases {
			if c.Failure != "" {
				fmt.Fprintf(w, "::error file=%s,title=%s::%s\n", ghProp(n.Path), ghProp(n.Exercise+" "+c.CellID+" "+c.Got.Verdict), ghData(c.Failure))
			}
		}
	}
	for _, ref := range r.References {
		if !ref.Recorded {
			fmt.Fprintf(w, "::error title=%s::%s\n", ghProp(ref.Exercise+" references "+ref.Profile), ghData(ref.Advice()))
		}
	}
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open step summary: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(f, "## npugrade check (%s)\n\n| exercise | notebook | kind | score | result |\n|---|---|---|---|---|\n", r.Profile)
	for _, n := range r.Notebooks {
		res := "✅"
		if !n.OK() {
			res = "❌"
		}
		fmt.Fprintf(f, "| %s | %s | %s | %s/%s | %s |\n", n.Exercise, n.Name, n.Kind, points(n.Score), points(n.Max), res)
	}
	return nil
}

func ghData(s string) string {
	r := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	return r.Replace(s)
}

func ghProp(s string) string {
	r := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
	return r.Replace(s)
}

// points writes a score for people: at most four decimals (an Otter
// question's tests share a point in thirds), no trailing zeros.
func points(x float64) string {
	return strconv.FormatFloat(math.Round(x*1e4)/1e4, 'f', -1, 64)
}
