package importer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/npugrade/npugrade/internal/compare"
)

// Quiz item kinds, as the learning hub names them.
const (
	KindJudge  = "判断题"
	KindSingle = "单选题"
	KindMulti  = "多选题"
	KindLab    = "实验题"
)

// HubAnswer is one item of a learning-hub answer text
// (answer/NN.0x_answer.txt).
type HubAnswer struct {
	// N is the item's number; 0 for an unnumbered lab task ("实验题：…").
	N    int
	Kind string
	// Question is the item's text in the answer file (may span lines).
	Question string
	// Answer is the normalised answer (compare.NormalizeAnswer): √ or ×,
	// or the letters; empty for a lab task.
	Answer string
	// Raw is the answer as written ("正确 (True)", "B（input_inplace_pass）").
	Raw         string
	Explanation string
	// Idea and Code are a lab task's 参考思路 and 参考代码.
	Idea, Code string
	Line       int
}

var (
	kindPattern = `(判断题|单选题|多选题|实验题)`
	// "1. （判断题）…", "10.（单选题）…", "1. （判断题）", "(1)【单选题】…".
	answerItemRe = regexp.MustCompile(`^\s*(?:(\d{1,3})\s*[.．、]|[（(]\s*(\d{1,3})\s*[)）])\s*[（(【\[]\s*` + kindPattern + `\s*[)）】\]]\s*(.*)$`)
	// "实验题：…" (an unnumbered lab task).
	answerLabRe = regexp.MustCompile(`^\s*` + KindLab + `\s*[：:]\s*(.*)$`)
	// "答案：B", "答案:A", "解析：…", "参考思路：…", "参考代码：…".
	answerFieldRe = regexp.MustCompile(`^\s*(答案|解析|参考思路|参考代码)\s*[：:]\s*(.*)$`)
)

// ParseHubAnswers reads an answer text. Every problem (an item without an
// answer, an answer that is not √/× or letters, a single choice with
// several letters, a number used twice) is returned, each naming its line.
func ParseHubAnswers(text string) ([]HubAnswer, []error) {
	var items []HubAnswer
	var errs []error
	var cur *HubAnswer
	field := ""
	for i, ln := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if m := answerItemRe.FindStringSubmatch(ln); m != nil {
			n, _ := strconv.Atoi(m[1] + m[2])
			items = append(items, HubAnswer{N: n, Kind: m[3], Question: strings.TrimSpace(m[4]), Line: i + 1})
			cur, field = &items[len(items)-1], "question"
			continue
		}
		if m := answerLabRe.FindStringSubmatch(ln); m != nil {
			items = append(items, HubAnswer{Kind: KindLab, Question: strings.TrimSpace(m[1]), Line: i + 1})
			cur, field = &items[len(items)-1], "question"
			continue
		}
		if cur == nil {
			continue // the title block
		}
		if m := answerFieldRe.FindStringSubmatch(ln); m != nil {
			field = m[1]
			appendField(cur, field, m[2])
			continue
		}
		if strings.Trim(ln, "=-— \t") == "" && strings.TrimSpace(ln) != "" {
			continue // a rule line
		}
		appendField(cur, field, ln)
	}
	seen := map[int]int{}
	for k := range items {
		it := &items[k]
		it.Question = strings.TrimSpace(it.Question)
		it.Explanation = strings.TrimSpace(it.Explanation)
		it.Idea, it.Code = strings.TrimSpace(it.Idea), strings.TrimSpace(it.Code)
		it.Raw = strings.TrimSpace(it.Raw)
		if j, dup := seen[it.N]; dup {
			errs = append(errs, fmt.Errorf("answer text line %d: item %s is listed twice (also line %d)", it.Line, itemName(it.N), items[j].Line))
		}
		seen[it.N] = k
		if it.Kind == KindLab {
			continue
		}
		if err := it.normalise(); err != nil {
			errs = append(errs, fmt.Errorf("answer text line %d: item %d (%s): %w", it.Line, it.N, it.Kind, err))
		}
	}
	return items, errs
}

func appendField(it *HubAnswer, field, text string) {
	var dst *string
	switch field {
	case "question":
		dst = &it.Question
	case "答案":
		dst = &it.Raw
	case "解析":
		dst = &it.Explanation
	case "参考思路":
		dst = &it.Idea
	case "参考代码":
		dst = &it.Code
	default:
		return
	}
	if *dst != "" || strings.TrimSpace(text) != "" {
		*dst += strings.TrimSpace(text) + "\n"
	}
}

// normalise checks the written answer against the item's kind and keeps
// its canonical form.
func (it *HubAnswer) normalise() error {
	if it.Raw == "" {
		return fmt.Errorf("no 答案 line")
	}
	// Only the first line is the answer; "答案：C。" and notes in brackets
	// are read by the one quiz normaliser the check cells use.
	first, _, _ := strings.Cut(it.Raw, "\n")
	ans := compare.NormalizeAnswer(first)
	switch it.Kind {
	case KindJudge:
		if ans != "√" && ans != "×" {
			return fmt.Errorf("answer %q is not 正确/错误 (√/×)", first)
		}
	case KindSingle, KindMulti:
		if !isLetters(ans) {
			return fmt.Errorf("answer %q is not a choice letter", first)
		}
		if it.Kind == KindSingle && len(ans) != 1 {
			return fmt.Errorf("a single choice has the answer %q (several letters)", first)
		}
	}
	it.Answer = ans
	return nil
}

func isLetters(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

func itemName(n int) string {
	if n == 0 {
		return "实验题 (unnumbered)"
	}
	return strconv.Itoa(n)
}
