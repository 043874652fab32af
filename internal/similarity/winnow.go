// Package similarity reports pairs of submissions whose solution code is
// unusually similar, the way MOSS does (Schleimer, Wilkerson
// and Aiken, "Winnowing: local algorithms for document fingerprinting",
// SIGMOD 2003): the code is cut into normalized Python tokens (every
// name becomes V, every number N, every string S, so renaming variables
// or rewording comments changes nothing), each run of K tokens is
// hashed, and in every window of W consecutive hashes the smallest is
// kept as a fingerprint. Any match of at least W+K-1 tokens shares a
// fingerprint. Fingerprints of the starter notebook (code every learner
// was given) and those most submissions share (idioms) are ignored. The
// report is advisory only: it never changes a score.
package similarity

import (
	"hash/fnv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// K is the k-gram length in tokens and W the winnowing window.
const (
	K = 6
	W = 4
)

// token is one normalized token and the source line it starts on (1-based).
type token struct {
	text string
	line int
}

var keywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true, "await": true,
	"break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true, "else": true, "except": true,
	"finally": true, "for": true, "from": true, "global": true, "if": true, "import": true, "in": true, "is": true,
	"lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true, "return": true, "try": true,
	"while": true, "with": true, "yield": true,
}

// operators longest first, so that ** is not read as two *.
var operators = []string{"**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "<<", ">>", "<=", ">=", "==", "!=",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="}

// tokenize reads Python source into normalized tokens. It never fails:
// anything it does not know is one token of itself, so hostile input
// costs linear time.
func tokenize(src string) []token {
	var out []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\\':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case isStringStart(src, i):
			start := line
			n := stringLen(src, i)
			line += strings.Count(src[i:i+n], "\n")
			out = append(out, token{"S", start})
			i += n
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isIdent(src[j]) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E')) {
				j++
			}
			out = append(out, token{"N", line})
			i = j
		case isIdentStart(src, i):
			j := i
			for j < len(src) {
				r, size := utf8.DecodeRuneInString(src[j:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += size
			}
			word := src[i:j]
			if !keywords[word] {
				word = "V"
			}
			out = append(out, token{word, line})
			i = j
		default:
			n := 1
			for _, op := range operators {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			if n == 1 && c >= utf8.RuneSelf {
				_, n = utf8.DecodeRuneInString(src[i:])
			}
			out = append(out, token{src[i : i+n], line})
			i += n
		}
	}
	return out
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdentStart(src string, i int) bool {
	r, _ := utf8.DecodeRuneInString(src[i:])
	return r == '_' || unicode.IsLetter(r)
}

// isStringStart reports a string literal at i, with an optional prefix
// (r, b, u, f and their pairs).
func isStringStart(src string, i int) bool {
	j := i
	for j < len(src) && j-i < 2 && strings.IndexByte("rRbBuUfF", src[j]) >= 0 {
		j++
	}
	return j < len(src) && (src[j] == '\'' || src[j] == '"')
}

// stringLen is the length of the string literal at i (to the end of the
// source when unterminated).
func stringLen(src string, i int) int {
	j := i
	for strings.IndexByte("rRbBuUfF", src[j]) >= 0 {
		j++
	}
	q := src[j : j+1]
	if strings.HasPrefix(src[j:], q+q+q) {
		end := strings.Index(src[j+3:], q+q+q)
		if end < 0 {
			return len(src) - i
		}
		return j + 3 + end + 3 - i
	}
	for k := j + 1; k < len(src); k++ {
		switch src[k] {
		case '\\':
			k++
		case q[0], '\n':
			return k + 1 - i
		}
	}
	return len(src) - i
}

// kgrams hashes every run of K tokens; the i-th hash starts at token i.
func kgrams(toks []token) []uint64 {
	if len(toks) < K {
		return nil
	}
	out := make([]uint64, len(toks)-K+1)
	h := fnv.New64a()
	for i := range out {
		h.Reset()
		for _, t := range toks[i : i+K] {
			h.Write([]byte(t.text))
			h.Write([]byte{0})
		}
		out[i] = h.Sum64()
	}
	return out
}

// fingerprint is a kept hash and the k-gram it came from.
type fingerprint struct {
	hash uint64
	pos  int
}

// winnow keeps the smallest hash of every window of W (the rightmost of
// equal ones), each selected position once. A document shorter than one
// window keeps its smallest hash.
func winnow(hashes []uint64) []fingerprint {
	if len(hashes) == 0 {
		return nil
	}
	w := min(W, len(hashes))
	var out []fingerprint
	last := -1
	for start := 0; start+w <= len(hashes); start++ {
		pick := start
		for i := start; i < start+w; i++ {
			if hashes[i] <= hashes[pick] {
				pick = i
			}
		}
		if pick != last {
			out = append(out, fingerprint{hashes[pick], pick})
			last = pick
		}
	}
	return out
}
