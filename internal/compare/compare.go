package compare

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/notebook"
)

// Result is the outcome of comparing one cell's outputs.
type Result struct {
	// Pass is true when the actual outputs are accepted.
	Pass bool
	// Message says why the outputs were rejected, in terms of the learner's
	// output (positions, the learner's own tokens); empty when Pass. It
	// never quotes the expected output.
	Message string
	// Observed is the learner's normalised output for the compared targets
	// (and its first exception), capped at 4 KB, binary data summarised.
	Observed string
	// Expected is the same rendering of the expected outputs; only filled
	// when the rule sets ShowExpected.
	Expected string
	// Diff is a short unified diff (expected → output) of the compared,
	// sanitised texts of the failing targets, capped at 40 lines / 4 KB;
	// only filled when the rule sets ShowExpected and the outputs differ.
	Diff string
}

// Caps on what a Result shows, so that a flood of output cannot bloat a
// feedback page, a database row or a JUnit file.
const (
	maxShownBytes = 4096
	maxDiffLines  = 40
	maxDiffBytes  = 4096
	maxLineRunes  = 200
)

// Outputs compares the actual outputs of a cell with the expected
// (reference) outputs under rule. Both sides are normalised first (see
// Normalize), then each target of the rule is extracted and compared, and
// every failing target is named in the Message.
//
// A target with output on one side only is a mismatch ("no output on
// stdout"); a target with no output on either side is skipped. In every
// mode but error, no-error, ignore and skip, an exception on one side only,
// or exceptions of different types, is a mismatch as well.
//
// Modes:
//   - exact: equal bytes after sanitizers, trailing whitespace at the very
//     end ignored; case_sensitive false lowercases both sides.
//   - tokens: the Kattis/DOMjudge default validator; see compareTokens.
//   - numeric: like tokens, but numbers are cut out of words ("[0.5," has
//     the number 0.5) and an expected number must be matched by a number
//     within atol (default 1e-9) OR rtol·|expected| (default 1e-6).
//   - regex: the expected output text is the pattern. It must match the
//     whole actual text (Python's re.fullmatch), trailing whitespace of both
//     ignored, with Go RE2 syntax; case_sensitive false adds (?i).
//     Sanitizers apply to the actual side only, since rewriting a pattern
//     would break it.
//   - lines-unordered: the multisets of lines are equal; unless
//     space_change_sensitive, whitespace runs count as one space and blank
//     lines are dropped.
//   - error: the actual outputs hold an exception of type rule.Ename, or of
//     the expected side's type when Ename is empty (any type when both are
//     empty or Ename is "*"); its message must equal rule.Evalue (trimmed,
//     sanitised) only when Evalue is set. Other outputs are not compared.
//   - no-error: the actual outputs hold no exception (nbgrader's rule);
//     with stderr among the targets, no stderr output either.
//   - image: each image (image/png unless the targets name other image
//     types) must be there on both sides, have the same size, and a 64-bit
//     difference hash within rule.MaxHashDistance bits.
//   - choice: quiz answers; each line's "label: answer" has its answer
//     normalised by NormalizeAnswer (√/×, choice letters in any order and
//     spelling), then the lines are compared as tokens.
//   - ignore, skip: always pass.
func Outputs(rule Rule, expected, actual []*notebook.Output) Result {
	exp, act := Normalize(expected), Normalize(actual)
	mode := rule.Mode()
	targets := rule.EffectiveTargets()
	if mode == ModeImage {
		targets = imageTargets(targets)
	}
	res := Result{Observed: render(act, targets)}
	if rule.ShowExpected {
		res.Expected = render(exp, targets)
	}
	var msgs, diffs []string
	switch mode {
	case ModeIgnore, ModeSkip:
		res.Pass = true
		return res
	case ModeNoError:
		if e := FirstError(act); e != nil {
			msgs = append(msgs, "the cell raised "+describeError(e))
		}
		// With stderr among the targets, writing to it fails too, as
		// nbgrader scores a test cell.
		if slices.Contains(rule.Targets, TargetStderr) && strings.TrimSpace(joinParts(TargetStderr, parts(act, TargetStderr))) != "" {
			msgs = append(msgs, "the cell wrote to stderr")
		}
	case ModeError:
		msgs, diffs = checkError(rule, exp, act)
		if rule.ShowExpected && FirstError(exp) == nil && rule.Ename != "" {
			// The expected exception comes from the rule, not the reference.
			res.Expected = strings.TrimSpace(res.Expected + "\n" + rule.Ename + ": " + rule.Evalue)
		}
	case ModeImage:
		if m := errorMismatch(exp, act); m != "" {
			msgs = append(msgs, m)
		}
		msgs = append(msgs, compareImages(rule, exp, act, targets)...)
	case ModeExact, ModeTokens, ModeNumeric, ModeRegex, ModeLinesUnordered, ModeChoice:
		if m := errorMismatch(exp, act); m != "" {
			msgs = append(msgs, m)
		}
		m, d := compareTargets(rule, exp, act, targets)
		msgs, diffs = append(msgs, m...), d
	default:
		msgs = append(msgs, fmt.Sprintf("unknown compare mode %q", mode))
	}
	res.Pass = len(msgs) == 0
	res.Message = strings.Join(msgs, "; ")
	if !res.Pass && rule.ShowExpected {
		res.Diff = capDiff(strings.Join(diffs, ""))
	}
	return res
}

func (r Rule) sanitize(s string) string {
	for _, z := range r.Sanitize {
		if z.Regex != nil {
			s = z.Regex.ReplaceAllString(s, z.Replace)
		}
	}
	return s
}

// compareTargets runs a text mode on every target and returns the messages
// and diffs of the failing ones.
func compareTargets(r Rule, exp, act []*notebook.Output, targets []string) (msgs, diffs []string) {
	for _, t := range targets {
		ep, ap := parts(exp, t), parts(act, t)
		if isBinaryMIME(t) {
			if m := compareBinary(t, ep, ap); m != "" {
				msgs = append(msgs, m)
				diffs = append(diffs, unifiedDiff(t, placeholders(t, ep), placeholders(t, ap)))
			}
			continue
		}
		et, at := joinParts(t, ep), joinParts(t, ap)
		if r.Mode() != ModeRegex {
			et = r.sanitize(et)
		}
		at = r.sanitize(at)
		var ok bool
		var why string
		switch {
		case et == "" && at == "":
			continue
		case at == "":
			why = "no output on " + t
		case et == "":
			why = "unexpected output on " + t + " (the expected output has none)"
		default:
			ok, why = compareText(r, et, at)
			why = t + ": " + why
		}
		if !ok {
			msgs = append(msgs, why)
			diffs = append(diffs, unifiedDiff(t, et, at))
		}
	}
	return msgs, diffs
}

func compareText(r Rule, exp, act string) (bool, string) {
	switch r.Mode() {
	case ModeExact:
		return compareExact(r, exp, act)
	case ModeRegex:
		return compareRegex(r, exp, act)
	case ModeLinesUnordered:
		return compareLinesUnordered(r, exp, act)
	case ModeChoice:
		return compareTokens(r, NormalizeAnswers(exp), NormalizeAnswers(act))
	}
	return compareTokens(r, exp, act)
}

func compareExact(r Rule, exp, act string) (bool, string) {
	exp = strings.TrimRightFunc(exp, unicode.IsSpace)
	act = strings.TrimRightFunc(act, unicode.IsSpace)
	if !r.caseSensitive() {
		exp, act = strings.ToLower(exp), strings.ToLower(act)
	}
	if exp == act {
		return true, ""
	}
	el, al := strings.Split(exp, "\n"), strings.Split(act, "\n")
	for i := range min(len(el), len(al)) {
		if el[i] != al[i] {
			return false, fmt.Sprintf("output differs from the expected output at line %d (column %d)", i+1, firstDiffColumn(el[i], al[i]))
		}
	}
	if len(al) < len(el) {
		return false, fmt.Sprintf("output ends early, after line %d (expected %d lines, got %d)", len(al), len(el), len(al))
	}
	return false, fmt.Sprintf("unexpected extra output from line %d on (expected %d %s, got %d)", len(el)+1, len(el), plural(len(el), "line", "lines"), len(al))
}

// firstDiffColumn returns the 1-based rune column where a and b first differ.
func firstDiffColumn(a, b string) int {
	col := 1
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			break
		}
		a, b = a[na:], b[nb:]
		col++
	}
	return col
}

// trimPatternRight drops the trailing whitespace of a pattern, except a
// character escaped with a backslash ("\ " must stay a literal space).
func trimPatternRight(p string) string {
	for p != "" {
		last := p[len(p)-1]
		if last != ' ' && last != '\t' && last != '\n' && last != '\r' {
			break
		}
		bs := 0
		for i := len(p) - 2; i >= 0 && p[i] == '\\'; i-- {
			bs++
		}
		if bs%2 == 1 {
			break
		}
		p = p[:len(p)-1]
	}
	return p
}

func compareRegex(r Rule, pattern, act string) (bool, string) {
	flags := ""
	if !r.caseSensitive() {
		flags = "(?i)"
	}
	re, err := regexp.Compile(flags + `\A(?:` + trimPatternRight(pattern) + `)\z`)
	if err != nil {
		// An authoring error; the compiler's message quotes the pattern, so
		// it is only shown when the expected output may be.
		if r.ShowExpected {
			return false, fmt.Sprintf("the expected output is not a valid regular expression: %v", err)
		}
		return false, "the expected output is not a valid regular expression (an error in the exercise, not in your answer)"
	}
	if re.MatchString(strings.TrimRightFunc(act, unicode.IsSpace)) {
		return true, ""
	}
	return false, "output does not match the expected pattern"
}

type numberedLine struct {
	n    int
	text string
}

func linesForMultiset(r Rule, s string) []numberedLine {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	cs, space := r.caseSensitive(), r.spaceChangeSensitive()
	var out []numberedLine
	for i, l := range strings.Split(s, "\n") {
		if space {
			l = strings.TrimRight(l, " \t\r")
		} else {
			l = strings.Join(strings.Fields(l), " ")
			if l == "" {
				continue
			}
		}
		if !cs {
			l = strings.ToLower(l)
		}
		out = append(out, numberedLine{n: i + 1, text: l})
	}
	return out
}

func compareLinesUnordered(r Rule, exp, act string) (bool, string) {
	el, al := linesForMultiset(r, exp), linesForMultiset(r, act)
	want := make(map[string]int, len(el))
	for _, l := range el {
		want[l.text]++
	}
	var stray *numberedLine
	for i, l := range al {
		if want[l.text] > 0 {
			want[l.text]--
			continue
		}
		if stray == nil {
			stray = &al[i]
		}
	}
	if stray == nil && len(el) == len(al) {
		return true, ""
	}
	var why []string
	if len(el) != len(al) {
		why = append(why, fmt.Sprintf("expected %d %s, got %d", len(el), plural(len(el), "line", "lines"), len(al)))
	}
	if stray != nil {
		why = append(why, fmt.Sprintf("line %d of the output is not in the expected output: got %s", stray.n, quote(stray.text)))
	} else {
		why = append(why, "some expected lines are missing")
	}
	return false, strings.Join(why, "; ")
}

// compareBinary compares base64 data (images in a text mode) as decoded
// bytes, output by output.
func compareBinary(mime string, ep, ap []string) string {
	ep, ap = nonEmpty(ep), nonEmpty(ap)
	switch {
	case len(ep) == 0 && len(ap) == 0:
		return ""
	case len(ap) == 0:
		return "no output on " + mime
	case len(ep) == 0:
		return "unexpected output on " + mime + " (the expected output has none)"
	case len(ep) != len(ap):
		return fmt.Sprintf("%s: expected %d %s, got %d", mime, len(ep), plural(len(ep), "output", "outputs"), len(ap))
	}
	for i := range ep {
		eb, eerr := decodeBase64(ep[i])
		ab, aerr := decodeBase64(ap[i])
		if eerr == nil && aerr == nil && string(eb) == string(ab) {
			continue
		}
		if eerr != nil && aerr != nil && stripSpace(ep[i]) == stripSpace(ap[i]) {
			continue
		}
		return fmt.Sprintf("%s: output %d differs from the expected output (got %s)", mime, i+1, placeholder(mime, ap[i]))
	}
	return ""
}

func nonEmpty(ps []string) []string {
	var out []string
	for _, p := range ps {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// errorMismatch is the exception check of the modes that compare output:
// raising where the reference did not (or the reverse) is a mismatch.
func errorMismatch(exp, act []*notebook.Output) string {
	ee, ae := FirstError(exp), FirstError(act)
	switch {
	case ee == nil && ae == nil:
		return ""
	case ee == nil:
		return "the cell raised " + describeError(ae)
	case ae == nil:
		return fmt.Sprintf("expected an exception of type %s, got none", ee.Ename)
	case ee.Ename != ae.Ename:
		return fmt.Sprintf("expected an exception of type %s, got %s", ee.Ename, describeError(ae))
	}
	return ""
}

func checkError(r Rule, exp, act []*notebook.Output) (msgs, diffs []string) {
	ee, ae := FirstError(exp), FirstError(act)
	want := r.Ename
	if want == "" && ee != nil {
		want = ee.Ename
	}
	anyType := want == "" || want == "*"
	wantLine := want
	if r.Evalue != "" {
		wantLine += ": " + r.Evalue
	}
	gotLine := ""
	if ae != nil {
		gotLine = ae.Ename + ": " + ae.Evalue
	}
	switch {
	case ae == nil && anyType:
		msgs = append(msgs, "expected an exception, got none")
	case ae == nil:
		msgs = append(msgs, fmt.Sprintf("expected an exception of type %s, got none", want))
	case !anyType && ae.Ename != want:
		msgs = append(msgs, fmt.Sprintf("expected an exception of type %s, got %s", want, describeError(ae)))
	case r.Evalue != "":
		w := strings.TrimSpace(r.sanitize(r.Evalue))
		g := strings.TrimSpace(r.sanitize(ae.Evalue))
		if !r.caseSensitive() {
			w, g = strings.ToLower(w), strings.ToLower(g)
		}
		if w != g {
			msgs = append(msgs, fmt.Sprintf("the message of the %s differs from the expected one: got %s", ae.Ename, quote(firstLine(ae.Evalue))))
		}
	}
	if len(msgs) > 0 {
		diffs = append(diffs, unifiedDiff("exception", wantLine, gotLine))
	}
	return msgs, diffs
}

// describeError shows the learner's exception in one short line.
func describeError(e *notebook.Output) string {
	v := firstLine(e.Evalue)
	if v == "" {
		return e.Ename
	}
	return e.Ename + ": " + clip(v, maxLineRunes)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// render shows the outputs of the compared targets, and the first
// exception, with a [label] line before each part when there are several.
func render(outs []*notebook.Output, targets []string) string {
	type section struct{ label, text string }
	var secs []section
	for _, t := range targets {
		ps := parts(outs, t)
		var text string
		if isBinaryMIME(t) {
			text = placeholders(t, ps)
		} else {
			text = joinParts(t, ps)
		}
		if text != "" {
			secs = append(secs, section{t, text})
		}
	}
	if e := FirstError(outs); e != nil {
		secs = append(secs, section{"error", e.Ename + ": " + e.Evalue})
	}
	switch len(secs) {
	case 0:
		return ""
	case 1:
		return capText(secs[0].text, maxShownBytes)
	}
	var b strings.Builder
	for _, s := range secs {
		b.WriteString("[" + s.label + "]\n" + s.text)
		if !strings.HasSuffix(s.text, "\n") {
			b.WriteByte('\n')
		}
		if b.Len() > maxShownBytes {
			break
		}
	}
	return capText(b.String(), maxShownBytes)
}

// capText cuts s to at most n bytes on a rune boundary and says how much was
// left out.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… [truncated: %d more bytes]", len(s)-cut)
}
