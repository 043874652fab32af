package compare

import (
	"fmt"
	"strings"
	"unicode"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 2

// maxLCSCells bounds the quadratic line diff (1 MB of int32). A larger
// differing middle is diffed only in its first lcsWindow lines and the rest
// is shown as one block: the diff is capped at 40 lines anyway, so only its
// start has to be exact.
const (
	maxLCSCells = 1 << 18
	lcsWindow   = 500
)

type diffOp struct {
	kind byte // ' ', '-' (expected only), '+' (output only)
	text string
	a, b int // expected and output lines before this op
}

// unifiedDiff returns a unified-style diff from the expected text to the
// output text, labelled with the target; lines are clipped, the whole is
// capped by capDiff.
func unifiedDiff(label, exp, act string) string {
	a := splitLines(exp)
	b := splitLines(act)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- expected %s\n+++ output %s\n", label, label)
	sb.WriteString(formatHunks(diffLines(a, b)))
	return sb.String()
}

func splitLines(s string) []string {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func diffLines(a, b []string) []diffOp {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	ops := make([]diffOp, 0, len(a)+len(b)-p-s)
	for i := range p {
		ops = append(ops, diffOp{' ', a[i], i, i})
	}
	ops = appendMiddle(ops, a[p:len(a)-s], b[p:len(b)-s], p, p)
	for i := range s {
		ai, bi := len(a)-s+i, len(b)-s+i
		ops = append(ops, diffOp{' ', a[ai], ai, bi})
	}
	return ops
}

// appendMiddle diffs the part between the common prefix and suffix with a
// longest-common-subsequence table when it is small enough.
func appendMiddle(ops []diffOp, a, b []string, a0, b0 int) []diffOp {
	n, m := len(a), len(b)
	if n*m > maxLCSCells && n > lcsWindow && m > lcsWindow {
		ops = appendMiddle(ops, a[:lcsWindow], b[:lcsWindow], a0, b0)
		a, b, a0, b0 = a[lcsWindow:], b[lcsWindow:], a0+lcsWindow, b0+lcsWindow
		n, m = len(a), len(b)
	}
	if n == 0 || m == 0 || n*m > maxLCSCells {
		for i, l := range a {
			ops = append(ops, diffOp{'-', l, a0 + i, b0})
		}
		for j, l := range b {
			ops = append(ops, diffOp{'+', l, a0 + n, b0 + j})
		}
		return ops
	}
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], a0 + i, b0 + j})
			i++
			j++
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, diffOp{'-', a[i], a0 + i, b0 + j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], a0 + i, b0 + j})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', a[i], a0 + i, b0 + m})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', b[j], a0 + n, b0 + j})
	}
	return ops
}

func formatHunks(ops []diffOp) string {
	var sb strings.Builder
	prevEnd := 0
	for i := 0; i < len(ops); {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i >= len(ops) {
			break
		}
		start := max(prevEnd, i-diffContext)
		last := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				last = j
			} else if j-last > 2*diffContext {
				break
			}
		}
		end := min(len(ops), last+diffContext+1)
		na, nb := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				na++
			}
			if op.kind != '-' {
				nb++
			}
		}
		as, bs := ops[start].a, ops[start].b
		if na > 0 {
			as++
		}
		if nb > 0 {
			bs++
		}
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", as, na, bs, nb)
		for _, op := range ops[start:end] {
			sb.WriteByte(op.kind)
			sb.WriteString(clip(op.text, maxLineRunes))
			sb.WriteByte('\n')
		}
		// Stop early: capDiff keeps 40 lines, so formatting more hunks of a
		// huge diff is wasted work.
		if sb.Len() > 2*maxDiffBytes {
			break
		}
		prevEnd = end
		i = end
	}
	return sb.String()
}

// capDiff keeps the first maxDiffLines lines and maxDiffBytes bytes.
func capDiff(d string) string {
	if d == "" {
		return ""
	}
	lines := strings.SplitAfter(d, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var sb strings.Builder
	for i, l := range lines {
		if i >= maxDiffLines || sb.Len()+len(l) > maxDiffBytes {
			fmt.Fprintf(&sb, "… (diff truncated, %d more lines)\n", len(lines)-i)
			break
		}
		sb.WriteString(l)
	}
	return sb.String()
}

// LineDiff returns a unified-style line diff from text a (labelled
// aLabel) to text b, in the same bounded form as a mismatch's diff; ""
// when the texts have the same lines. Reference reviews show it.
func LineDiff(aLabel, bLabel, a, b string) string {
	hunks := formatHunks(diffLines(splitLines(a), splitLines(b)))
	if hunks == "" {
		return ""
	}
	return capDiff("--- " + aLabel + "\n+++ " + bLabel + "\n" + hunks)
}
