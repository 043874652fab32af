package compare

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Quiz answers are normalised here, once, for every quiz: the learning-hub
// importer's check cells and any exercise whose check cell prints
// "q1: <answer>" with compare "choice". A judgement is √ or ×; choice
// letters are upper case, each once, in alphabetical order.
var (
	judgeTrue = map[string]bool{"√": true, "✓": true, "✔": true, "v": true, "对": true, "正确": true,
		"true": true, "yes": true, "是": true}
	judgeFalse = map[string]bool{"×": true, "✗": true, "✘": true, "x": true, "错": true, "错误": true,
		"false": true, "no": true, "否": true}
	// What may stand between choice letters: 、,，;； and spaces.
	choiceSeparators = regexp.MustCompile(`[\s、,，;；/]+`)
	// A note after the answer: "B（input_inplace_pass）", "正确 (True)".
	answerNote = regexp.MustCompile(`\s*[（(][^（()）]*[)）]\s*`)
	quoteChars = "\"'“”‘’`"
)

// maxChoice is the last option letter a quiz uses; words such as "None"
// are then never read as a set of letters.
const maxChoice = 'J'

// NormalizeAnswer returns a quiz answer in canonical form: "√" or "×" for
// a judgement (√/×/✓/✗/v/x/对/错/正确/错误/True/False/yes/no/是/否, any case,
// a note in brackets ignored), the sorted set of letters for a choice ("B",
// "A、B", "AB", "a, b", "B A" all give "AB"; options A–J), and anything else trimmed but
// unchanged, so that "None" (an unanswered question) never matches.
func NormalizeAnswer(s string) string {
	t := strings.Trim(strings.TrimSpace(s), quoteChars)
	t = strings.TrimRight(t, "。.!！ ")
	if t == "" {
		return t
	}
	bare := strings.TrimSpace(answerNote.ReplaceAllString(t, " "))
	if bare == "" {
		bare = t
	}
	low := strings.ToLower(bare)
	switch {
	case judgeTrue[low]:
		return "√"
	case judgeFalse[low]:
		return "×"
	}
	letters := choiceSeparators.ReplaceAllString(bare, "")
	if letters == "" || len(letters) > 26 {
		return t
	}
	set := map[rune]bool{}
	for _, r := range letters {
		u := unicode.ToUpper(r)
		if u < 'A' || u > maxChoice {
			return t
		}
		set[u] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, string(r))
	}
	sort.Strings(out)
	return strings.Join(out, "")
}

// NormalizeAnswers applies NormalizeAnswer to the answer part of every
// "label: answer" line of a check cell's output (a line without a colon is
// an answer by itself).
func NormalizeAnswers(text string) string {
	lines := strings.Split(text, "\n")
	for i, ln := range lines {
		label, ans, ok := strings.Cut(ln, ":")
		if !ok {
			lines[i] = NormalizeAnswer(ln)
			continue
		}
		lines[i] = label + ": " + NormalizeAnswer(ans)
	}
	return strings.Join(lines, "\n")
}
