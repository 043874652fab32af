package compare

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// token is one piece of a text as the tokens and numeric modes see it.
type token struct {
	s     string
	line  int // 1-based line where the token starts
	word  int // 1-based index of the whitespace-separated word in its line
	space bool
	isNum bool
	num   float64
}

// tokenize splits s on whitespace runs. keepSpace keeps the runs as tokens
// (space_change_sensitive). parseWords marks whole words that are numbers;
// splitNumbers goes further and cuts numbers out of words, so that Python
// reprs such as "[0.1234," or "tensor([1.5000])" still compare numerically.
func tokenize(s string, keepSpace, parseWords, splitNumbers bool) []token {
	// Presized: growing a slice of 56-byte tokens dominated the profile.
	toks := make([]token, 0, len(s)/4+1)
	line, word := 1, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			j, startLine := i, line
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsSpace(r) {
					break
				}
				if r == '\n' {
					line++
					word = 0
				}
				j += size
			}
			if keepSpace {
				toks = append(toks, token{s: s[i:j], line: startLine, word: word, space: true})
			}
			i = j
			continue
		}
		j := i + size
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += size
		}
		word++
		w := s[i:j]
		switch {
		case splitNumbers:
			toks = appendPieces(toks, w, line, word)
		case parseWords:
			t := token{s: w, line: line, word: word}
			if numberAt(w, 0) == len(w) {
				t.num, t.isNum = parseNumber(w), true
			}
			toks = append(toks, t)
		default:
			toks = append(toks, token{s: w, line: line, word: word})
		}
		i = j
	}
	return toks
}

// appendPieces cuts the numbers out of one word.
func appendPieces(toks []token, w string, line, word int) []token {
	textStart := 0
	for i := 0; i < len(w); {
		if n := numberAt(w, i); n > 0 {
			if textStart < i {
				toks = append(toks, token{s: w[textStart:i], line: line, word: word})
			}
			lit := w[i : i+n]
			toks = append(toks, token{s: lit, line: line, word: word, isNum: true, num: parseNumber(lit)})
			i += n
			textStart = i
			continue
		}
		_, size := utf8.DecodeRuneInString(w[i:])
		i += size
	}
	if textStart < len(w) {
		toks = append(toks, token{s: w[textStart:], line: line, word: word})
	}
	return toks
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIdentByte reports bytes that make a following number part of a name
// ("float32", "x1", "α2"), which is then not read as a number.
func isIdentByte(c byte) bool {
	return isDigit(c) || c == '_' || c == '.' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// numberAt returns the length of the number literal starting at w[i], or 0.
// It accepts what Python, NumPy and PyTorch print: 3, -3, 3., .5, 1e-05,
// 2.5E+10, nan, inf, -inf, infinity (any case). True and False are not
// numbers, nor are hex literals or digits inside names.
func numberAt(w string, i int) int {
	if i > 0 && isIdentByte(w[i-1]) {
		return 0
	}
	j := i
	if j < len(w) && (w[j] == '+' || w[j] == '-') {
		j++
	}
	for _, word := range []string{"infinity", "inf", "nan"} {
		if len(w)-j >= len(word) && strings.EqualFold(w[j:j+len(word)], word) {
			end := j + len(word)
			if end < len(w) && isIdentByte(w[end]) && w[end] != '.' {
				return 0
			}
			return end - i
		}
	}
	start := j
	for j < len(w) && isDigit(w[j]) {
		j++
	}
	intDigits := j - start
	if j < len(w) && w[j] == '.' {
		k := j + 1
		for k < len(w) && isDigit(w[k]) {
			k++
		}
		if intDigits > 0 || k > j+1 {
			j = k
		}
	}
	if j == start {
		return 0
	}
	if j < len(w) && (w[j] == 'e' || w[j] == 'E') {
		k := j + 1
		if k < len(w) && (w[k] == '+' || w[k] == '-') {
			k++
		}
		d := k
		for k < len(w) && isDigit(w[k]) {
			k++
		}
		if k > d {
			j = k
		}
	}
	return j - i
}

// parseNumber reads a literal accepted by numberAt. Out-of-range literals
// become ±Inf or 0, as Python's float() makes them.
func parseNumber(lit string) float64 {
	body := strings.TrimLeft(lit, "+-")
	if strings.EqualFold(body, "nan") {
		return math.NaN()
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return math.NaN()
	}
	return f
}

// closeEnough is the judges' float rule: |e-a| <= atol OR |e-a| <= rtol*|e|
// with e the expected value; NaN matches only NaN and an infinity only the
// infinity of the same sign.
func closeEnough(e, a, atol, rtol float64) bool {
	if math.IsNaN(e) || math.IsNaN(a) {
		return math.IsNaN(e) && math.IsNaN(a)
	}
	if math.IsInf(e, 0) || math.IsInf(a, 0) {
		return e == a
	}
	d := math.Abs(e - a)
	return d <= atol || d <= rtol*math.Abs(e)
}

func formatTolerance(atol, rtol float64) string {
	var parts []string
	if atol > 0 {
		parts = append(parts, "atol "+strconv.FormatFloat(atol, 'g', -1, 64))
	}
	if rtol > 0 {
		parts = append(parts, "rtol "+strconv.FormatFloat(rtol, 'g', -1, 64))
	}
	if len(parts) == 0 {
		return "no tolerance"
	}
	return strings.Join(parts, ", ")
}

// compareTokens implements the tokens and numeric modes on sanitised texts.
// The message names positions in the learner's output and quotes only the
// learner's tokens.
func compareTokens(r Rule, exp, act string) (bool, string) {
	exp = strings.TrimRightFunc(exp, unicode.IsSpace)
	act = strings.TrimRightFunc(act, unicode.IsSpace)
	numeric := r.Mode() == ModeNumeric
	atol, rtol, tol := r.tolerances()
	keepSpace := r.spaceChangeSensitive()
	cs := r.caseSensitive()
	et := tokenize(exp, keepSpace, tol && !numeric, numeric)
	at := tokenize(act, keepSpace, tol && !numeric, numeric)
	eLines, aLines := countLines(exp), countLines(act)
	for i := 0; ; i++ {
		if i >= len(et) && i >= len(at) {
			return true, ""
		}
		if i >= len(at) {
			if len(at) == 0 {
				return false, "the output is empty (only whitespace)"
			}
			last := at[len(at)-1]
			return false, fmt.Sprintf("output ends early, after line %d (token %d)%s", last.line, last.word, lineCounts(eLines, aLines))
		}
		a := at[i]
		if i >= len(et) {
			if a.space {
				return false, fmt.Sprintf("unexpected extra whitespace at line %d%s", a.line, lineCounts(eLines, aLines))
			}
			return false, fmt.Sprintf("unexpected extra output at line %d (token %d): got %s%s", a.line, a.word, quote(a.s), lineCounts(eLines, aLines))
		}
		e := et[i]
		switch {
		case e.space || a.space:
			if e.space && a.space && e.s == a.s {
				continue
			}
			return false, fmt.Sprintf("whitespace differs from the expected output at line %d (after token %d)", a.line, a.word)
		case tol && e.isNum && a.isNum:
			if closeEnough(e.num, a.num, atol, rtol) {
				continue
			}
			return false, fmt.Sprintf("line %d (token %d): number %s is outside the tolerance (%s)", a.line, a.word, clip(a.s, 40), formatTolerance(atol, rtol))
		case numeric && e.isNum:
			return false, fmt.Sprintf("expected a number at line %d (token %d), got %s", a.line, a.word, quote(a.s))
		}
		if cs && e.s == a.s || !cs && strings.EqualFold(e.s, a.s) {
			continue
		}
		return false, fmt.Sprintf("output differs from the expected output at line %d (token %d): got %s", a.line, a.word, quote(a.s))
	}
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}

// lineCounts adds the line counts to a message when they differ, the
// quickest hint at what is missing or extra.
func lineCounts(exp, act int) string {
	if exp == act {
		return ""
	}
	return fmt.Sprintf(" (expected %d %s, got %d)", exp, plural(exp, "line", "lines"), act)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// quote shows a short piece of the learner's text in a message.
func quote(s string) string { return strconv.Quote(clip(s, 40)) }

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n]) + "…"
}
