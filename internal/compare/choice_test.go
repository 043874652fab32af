package compare_test

import (
	"testing"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/notebook"
)

func TestNormalizeAnswer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"√": "√", "对": "√", "正确": "√", "True": "√", "true": "√", "正确 (True)": "√", " ✓ ": "√", "v": "√",
		"×": "×", "错": "×", "错误": "×", "False": "×", "错误 (False)": "×", "x": "×", "✗": "×",
		"B": "B", "b": "B", "B（input_inplace_pass）": "B", "C。": "C", "A、B": "AB", "AB": "AB", "A,B": "AB",
		"b, a": "AB", "D C B A": "ABCD", "ABC": "ABC", "C、A、B": "ABC", "'A'": "A",
		"None": "None", "none": "none", "": "", "我不知道": "我不知道", "A1": "A1",
	} {
		if got := compare.NormalizeAnswer(in); got != want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestChoiceMode: a check cell printing "q1: <answer>" passes with any
// spelling of the right answer and fails on a wrong or missing one.
func TestChoiceMode(t *testing.T) {
	t.Parallel()
	rule, err := compare.ParseRule(nil, []byte(`{"compare": "choice", "feedback": "解析：……"}`))
	if err != nil {
		t.Fatal(err)
	}
	out := func(s string) []*notebook.Output {
		return []*notebook.Output{{OutputType: notebook.OutputStream, Name: "stdout", Text: notebook.MultilineString(s)}}
	}
	exp := out("q1: √\nq8: A、B、D\n")
	for act, pass := range map[string]bool{
		"q1: True\nq8: ABD\n":   true,
		"q1: 对\nq8: d,b,a\n":    true,
		"q1: 正确\nq8: B A D\n":   true,
		"q1: ×\nq8: ABD\n":      false,
		"q1: √\nq8: AB\n":       false,
		"q1: None\nq8: None\n":  false,
		"q2: √\nq8: ABD\n":      false,
		"q1: √\nq8: ABD\nq9:\n": false,
	} {
		if got := compare.Outputs(rule, exp, out(act)); got.Pass != pass {
			t.Errorf("%q: pass %v, want %v (%s)", act, got.Pass, pass, got.Message)
		}
	}
}
