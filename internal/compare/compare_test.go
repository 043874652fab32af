package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/notebook"
)

type outputsCase struct {
	name     string
	rule     Rule
	exp, act []*notebook.Output
	pass     bool
	msg      string // substring of Message when !pass
}

func runOutputsCases(t *testing.T, cases []outputsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := Outputs(tc.rule, tc.exp, tc.act)
			if res.Pass != tc.pass {
				t.Fatalf("Pass = %v, want %v (message %q)", res.Pass, tc.pass, res.Message)
			}
			if tc.pass && res.Message != "" {
				t.Errorf("a passing result has message %q", res.Message)
			}
			if !tc.pass && !strings.Contains(res.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", res.Message, tc.msg)
			}
		})
	}
}

func so(s string) []*notebook.Output { return outs(stdout(s)) }

func TestExact(t *testing.T) {
	t.Parallel()
	exact := Rule{Compare: ModeExact}
	runOutputsCases(t, []outputsCase{
		{"equal", exact, so("a b\nc\n"), so("a b\nc\n"), true, ""},
		{"trailing whitespace at the end", exact, so("a\nb\n"), so("a\nb  \n\n"), true, ""},
		{"inner whitespace matters", exact, so("a b\n"), so("a  b\n"), false, "at line 1 (column 3)"},
		{"line 2", exact, so("x\nabc\n"), so("x\nabd\n"), false, "output differs from the expected output at line 2 (column 3)"},
		{"case sensitive by default", exact, so("Hello\n"), so("hello\n"), false, "line 1 (column 1)"},
		{"case_sensitive false", Rule{Compare: ModeExact, CaseSensitive: ptr(false)}, so("Hello\n"), so("HELLO\n"), true, ""},
		{"short", exact, so("a\nb\nc\n"), so("a\n"), false, "output ends early, after line 1 (expected 3 lines, got 1)"},
		{"long", exact, so("a\n"), so("a\nb\nc\n"), false, "unexpected extra output from line 2 on (expected 1 line, got 3)"},
		{"chunking and CR do not matter", exact, so("100%\nok\n"), outs(stdout("10%\r"), stdout("100%\n"), stdout("ok\r\n")), true, ""},
		{"sanitizers on both sides", Rule{Compare: ModeExact, Sanitize: []Sanitizer{{regexp.MustCompile(`0x[0-9a-f]+`), "0xADDR"}}},
			so("<obj at 0x7f00aa>\n"), so("<obj at 0x55bb01>\n"), true, ""},
		{"sanitizer groups", Rule{Compare: ModeExact, Sanitize: []Sanitizer{{regexp.MustCompile(`took (\d+)ms`), "took Nms"}}},
			so("took 12ms\n"), so("took 3071ms\n"), true, ""},
		{"text/plain target", exact, outs(result("text/plain", "42")), outs(result("text/plain", "42")), true, ""},
		{"text/plain differs", exact, outs(result("text/plain", "42")), outs(result("text/plain", "43")), false, "text/plain: output differs"},
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tok := Rule{}
	runOutputsCases(t, []outputsCase{
		{"whitespace runs are one", tok, so("a b\tc\n"), so("  a   b\n\nc"), true, ""},
		{"case-insensitive by default", tok, so("Yes\n"), so("YES\n"), true, ""},
		{"case_sensitive", Rule{CaseSensitive: ptr(true)}, so("Yes\n"), so("YES\n"), false, "line 1 (token 1)"},
		{"token differs", tok, so("1 2 3\n4 5 6\n"), so("1 2 3\n4 5 7\n"), false, `output differs from the expected output at line 2 (token 3): got "7"`},
		{"extra token", tok, so("1 2\n"), so("1 2 3\n"), false, `unexpected extra output at line 1 (token 3): got "3"`},
		{"missing token", tok, so("1 2\n3\n"), so("1 2\n"), false, "output ends early, after line 1 (token 2) (expected 2 lines, got 1)"},
		{"empty output", tok, so("1\n"), so(" \n"), false, "output is empty"},
		{"floats are strings without tolerance", tok, so("1.0\n"), so("1\n"), false, `got "1"`},
		{"space_change_sensitive", Rule{SpaceChangeSensitive: ptr(true)}, so("a b\n"), so("a  b\n"), false, "whitespace differs from the expected output at line 1 (after token 1)"},
		{"space_change_sensitive equal", Rule{SpaceChangeSensitive: ptr(true)}, so("a b\nc\n"), so("a b\nc"), true, ""},
		{"space_change_sensitive newline vs space", Rule{SpaceChangeSensitive: ptr(true)}, so("a b\n"), so("a\nb\n"), false, "whitespace differs"},
		{"atol", Rule{ATol: ptr(0.01)}, so("x 1.000\n"), so("X 1.005\n"), true, ""},
		{"atol exceeded", Rule{ATol: ptr(0.001)}, so("x 0.5\n"), so("x 0.5123\n"), false, "line 1 (token 2): number 0.5123 is outside the tolerance (atol 0.001)"},
		{"rtol", Rule{RTol: ptr(1e-3)}, so("1000\n"), so("1000.9\n"), true, ""},
		{"rtol relative to expected", Rule{RTol: ptr(0.5)}, so("1\n"), so("1.9\n"), false, "outside the tolerance (rtol 0.5)"},
		{"integers as floats with tolerance", Rule{ATol: ptr(0.0)}, so("3\n"), so("3.0\n"), true, ""},
		{"integer vs float within tolerance", Rule{ATol: ptr(0.1)}, so("3\n"), so("3.05\n"), true, ""},
		{"non-numbers still strings with tolerance", Rule{ATol: ptr(1.0)}, so("cat 1\n"), so("dog 1\n"), false, `got "dog"`},
		{"nan with tolerance", Rule{ATol: ptr(1e-6)}, so("nan\n"), so("NaN\n"), true, ""},
		{"inf with tolerance", Rule{ATol: ptr(1e-6)}, so("-inf\n"), so("-Infinity\n"), true, ""},
		{"inf sign with tolerance", Rule{ATol: ptr(1e6)}, so("inf\n"), so("-inf\n"), false, "number -inf is outside the tolerance"},
		{"number vs word with tolerance", Rule{ATol: ptr(1e-6)}, so("1.5\n"), so("x\n"), false, `got "x"`},
		{"True is a word", Rule{ATol: ptr(1.0)}, so("True\n"), so("1\n"), false, `got "1"`},
		{"both targets", tok, outs(stdout("a\n"), result("text/plain", "B")), outs(stdout("A\n"), result("text/plain", "b")), true, ""},
	})
}

func TestNumeric(t *testing.T) {
	t.Parallel()
	num := Rule{Compare: ModeNumeric}
	runOutputsCases(t, []outputsCase{
		{"default rtol", num, so("mean 0.3333333\n"), so("mean 0.33333334\n"), true, ""},
		{"default atol near zero", num, so("1e-12\n"), so("-5e-10\n"), true, ""},
		{"outside defaults", num, so("0.5\n"), so("0.5001\n"), false, "number 0.5001 is outside the tolerance (atol 1e-09, rtol 1e-06)"},
		{"custom atol", Rule{Compare: ModeNumeric, ATol: ptr(1e-3)}, so("0.5\n"), so("0.5123\n"), false, "line 1 (token 1): number 0.5123 is outside the tolerance (atol 0.001, rtol 1e-06)"},
		{"integers vs floats", num, so("3\n"), so("3.0\n"), true, ""},
		{"python exponent", num, so("1e-05\n"), so("0.00001\n"), true, ""},
		{"numbers inside a list repr", num, so("[0.1, 0.2, 0.30000000000000004]\n"), so("[0.1, 0.2, 0.3]\n"), true, ""},
		{"numbers inside a tensor repr", num, so("tensor([1.0000, 2.5000])\n"), so("tensor([1., 2.5])\n"), true, ""},
		{"numpy array wrong value", num, so("array([1.5, 2.5])\n"), so("array([1.5, 2.6])\n"), false, "number 2.6 is outside"},
		{"nan matches nan", num, so("[nan, 1.0]\n"), so("[NaN, 1.0]\n"), true, ""},
		{"nan vs number", num, so("nan\n"), so("0.0\n"), false, "number 0.0 is outside"},
		{"inf matches same sign", num, so("(inf, -inf)\n"), so("(Infinity, -inf)\n"), true, ""},
		{"inf vs other sign", num, so("inf\n"), so("-inf\n"), false, "number -inf is outside"},
		{"inf vs big", num, so("inf\n"), so("1e308\n"), false, "number 1e308 is outside"},
		{"overflowing literal is inf", num, so("inf\n"), so("1e999\n"), true, ""},
		{"expected a number", num, so("x = 1.5\n"), so("x = one\n"), false, `expected a number at line 1 (token 3), got "one"`},
		{"words compare as tokens", num, so("Loss: 0.25\n"), so("loss: 0.25\n"), true, ""},
		{"words compare case-sensitively when asked", Rule{Compare: ModeNumeric, CaseSensitive: ptr(true)}, so("Loss: 0.25\n"), so("loss: 0.25\n"), false, `got "loss:"`},
		{"True and False are not numbers", num, so("True\n"), so("1\n"), false, `got "1"`},
		{"digits in names are text", num, so("float32\n"), so("float64\n"), false, `got "float64"`},
		{"signs", num, so("x=-1.5 y=+2\n"), so("x=-1.5 y=2\n"), true, ""},
		{"missing numbers", num, so("1 2 3\n"), so("1 2\n"), false, "output ends early"},
		{"extra numbers", num, so("1 2\n"), so("1 2 3\n"), false, `unexpected extra output at line 1 (token 3): got "3"`},
		{"multi-line position", num, so("a 1\nb 2 3\n"), so("a 1\nb 2 4\n"), false, "line 2 (token 3)"},
	})
}

func TestRegex(t *testing.T) {
	t.Parallel()
	re := Rule{Compare: ModeRegex}
	runOutputsCases(t, []outputsCase{
		{"full match", re, so(`Accuracy: 0\.9\d+` + "\n"), so("Accuracy: 0.9731\n"), true, ""},
		{"must match the whole text", re, so(`Accuracy: 0\.9\d+` + "\n"), so("Accuracy: 0.9731 (best)\n"), false, "output does not match the expected pattern"},
		{"no partial match at start", re, so(`\d+`), so("x 12"), false, "does not match"},
		{"multi-line pattern", re, so("epoch \\d+\nloss [0-9.]+\n"), so("epoch 3\nloss 0.25\n"), true, ""},
		{"case sensitive by default", re, so("ok"), so("OK"), false, "does not match"},
		{"case_sensitive false", Rule{Compare: ModeRegex, CaseSensitive: ptr(false)}, so("ok"), so("OK"), true, ""},
		{"escaped trailing space kept", re, so(`a\ ` + "\n"), so("a"), false, "does not match"},
		{"bad pattern", re, so("(unclosed"), so("x"), false, "not a valid regular expression (an error in the exercise"},
		{"sanitizers apply to the output only", Rule{Compare: ModeRegex, Sanitize: []Sanitizer{{regexp.MustCompile(`\d{4}-\d\d-\d\d`), "DATE"}}},
			so(`run on DATE: \w+`), so("run on 2025-01-31: ok\n"), true, ""},
	})
}

func TestLinesUnordered(t *testing.T) {
	t.Parallel()
	lu := Rule{Compare: ModeLinesUnordered}
	runOutputsCases(t, []outputsCase{
		{"reordered", lu, so("a 1\nb 2\nc 3\n"), so("c 3\na 1\nb 2\n"), true, ""},
		{"duplicates count", lu, so("x\nx\ny\n"), so("x\ny\ny\n"), false, `line 3 of the output is not in the expected output: got "y"`},
		{"more lines", lu, so("x\ny\n"), so("y\nx\nz\n"), false, `expected 2 lines, got 3; line 3 of the output is not in the expected output`},
		{"fewer lines", lu, so("x\ny\nz\n"), so("z\nx\n"), false, "expected 3 lines, got 2; some expected lines are missing"},
		{"whitespace runs and blank lines ignored", lu, so("a  b\n\nc\n"), so("c\n a b \n"), true, ""},
		{"space_change_sensitive", Rule{Compare: ModeLinesUnordered, SpaceChangeSensitive: ptr(true)}, so("a  b\nc\n"), so("c\na b\n"), false, "line 2 of the output"},
		{"case sensitive by default", lu, so("A\nb\n"), so("b\na\n"), false, "line 2"},
		{"case_sensitive false", Rule{Compare: ModeLinesUnordered, CaseSensitive: ptr(false)}, so("A\nb\n"), so("B\na\n"), true, ""},
		{"set order from a dict", lu, so("{'b': 2}\n{'a': 1}\n"), outs(stdout("{'a': 1}\n"), stdout("{'b': 2}\n")), true, ""},
	})
}

func TestErrorModes(t *testing.T) {
	t.Parallel()
	errMode := Rule{Compare: ModeError}
	runOutputsCases(t, []outputsCase{
		{"ename from rule", Rule{Compare: ModeError, Ename: "ValueError"}, nil, outs(stdout("x"), raised("ValueError", "bad input")), true, ""},
		{"ename from rule, none raised", Rule{Compare: ModeError, Ename: "ValueError"}, nil, so("x"), false, "expected an exception of type ValueError, got none"},
		{"ename from rule, other raised", Rule{Compare: ModeError, Ename: "ValueError"}, nil, outs(raised("TypeError", "unsupported")), false, "expected an exception of type ValueError, got TypeError: unsupported"},
		{"ename from reference", errMode, outs(raised("KeyError", "'k'")), outs(raised("KeyError", "'j'")), true, ""},
		{"ename from reference differs", errMode, outs(raised("KeyError", "'k'")), outs(raised("IndexError", "list index out of range")), false, "expected an exception of type KeyError, got IndexError"},
		{"any exception", errMode, nil, outs(raised("RuntimeError", "")), true, ""},
		{"star is any", Rule{Compare: ModeError, Ename: "*"}, outs(raised("KeyError", "")), outs(raised("RuntimeError", "")), true, ""},
		{"any exception, none", errMode, so("x"), so("x"), false, "expected an exception, got none"},
		{"evalue not compared unless asked", errMode, outs(raised("ValueError", "a")), outs(raised("ValueError", "b")), true, ""},
		{"evalue", Rule{Compare: ModeError, Ename: "ValueError", Evalue: "n must be positive"}, nil, outs(raised("ValueError", "n must be positive ")), true, ""},
		{"evalue differs", Rule{Compare: ModeError, Ename: "ValueError", Evalue: "n must be positive"}, nil, outs(raised("ValueError", "n is negative")), false, `the message of the ValueError differs from the expected one: got "n is negative"`},
		{"evalue sanitised", Rule{Compare: ModeError, Evalue: "no file /tmp/X", Sanitize: []Sanitizer{{regexp.MustCompile(`/tmp/\w+`), "/tmp/X"}}}, nil, outs(raised("OSError", "no file /tmp/abc123")), true, ""},
		{"stdout ignored in error mode", Rule{Compare: ModeError, Ename: "ValueError"}, so("expected\n"), outs(stdout("other\n"), raised("ValueError", "")), true, ""},
		{"no-error passes", Rule{Compare: ModeNoError}, so("a\n"), so("anything\n"), true, ""},
		{"no-error fails", Rule{Compare: ModeNoError}, nil, outs(raised("NameError", "name 'x' is not defined\nmore")), false, "the cell raised NameError: name 'x' is not defined …"},
		{"text mode: learner raised", Rule{}, so("1\n"), outs(stdout("1\n"), raised("ZeroDivisionError", "division by zero")), false, "the cell raised ZeroDivisionError: division by zero"},
		{"text mode: reference raised, learner not", Rule{}, outs(raised("StopIteration", "")), nil, false, "expected an exception of type StopIteration, got none"},
		{"text mode: both raised the same", Rule{}, outs(stdout("1\n"), raised("KeyError", "'a'")), outs(stdout("1\n"), raised("KeyError", "'b'")), true, ""},
		{"text mode: different types", Rule{}, outs(raised("KeyError", "'a'")), outs(raised("TypeError", "x")), false, "expected an exception of type KeyError, got TypeError"},
	})
}

func TestIgnoreSkipAndUnknown(t *testing.T) {
	t.Parallel()
	runOutputsCases(t, []outputsCase{
		{"ignore", Rule{Compare: ModeIgnore}, so("a\n"), outs(stdout("b\n"), raised("ValueError", "")), true, ""},
		{"skip", Rule{Compare: ModeSkip}, so("a\n"), nil, true, ""},
		{"unknown mode from Go code", Rule{Compare: "fuzzy"}, so("a\n"), so("a\n"), false, `unknown compare mode "fuzzy"`},
	})
}

func TestMissingTargets(t *testing.T) {
	t.Parallel()
	runOutputsCases(t, []outputsCase{
		{"nothing on both sides", Rule{}, nil, nil, true, ""},
		{"no stdout", Rule{}, so("a\n"), nil, false, "no output on stdout"},
		{"unexpected stdout", Rule{}, nil, so("debug\n"), false, "unexpected output on stdout (the expected output has none)"},
		{"no text/plain", Rule{}, outs(stdout("a\n"), result("text/plain", "3")), so("a\n"), false, "no output on text/plain"},
		{"printed instead of returned", Rule{}, outs(result("text/plain", "3")), so("3\n"), false, "unexpected output on stdout (the expected output has none); no output on text/plain"},
		{"stderr ignored by default", Rule{}, so("a\n"), outs(stdout("a\n"), stream("stderr", "DeprecationWarning\n")), true, ""},
		{"stderr when asked", Rule{Targets: []string{"stdout", "stderr"}}, so("a\n"), outs(stdout("a\n"), stream("stderr", "DeprecationWarning\n")), false, "unexpected output on stderr"},
		{"html when asked", Rule{Compare: ModeExact, Targets: []string{"text/html"}}, outs(display("text/html", "<b>1</b>")), outs(display("text/html", "<b>2</b>")), false, "text/html: output differs"},
		{"html not compared by default", Rule{}, outs(display("text/html", "<b>1</b>")), outs(display("text/html", "<b>2</b>")), true, ""},
	})
}

func TestBinaryTargetInTextMode(t *testing.T) {
	t.Parallel()
	red, blue := pngBase64(t, solid(4, 4, 255, 0, 0)), pngBase64(t, solid(4, 4, 0, 0, 255))
	exact := Rule{Compare: ModeExact, Targets: []string{"image/png"}}
	runOutputsCases(t, []outputsCase{
		{"same bytes, different wrapping", exact, outs(display("image/png", red)), outs(display("image/png", red[:10]+"\n"+red[10:])), true, ""},
		{"different bytes", exact, outs(display("image/png", red)), outs(display("image/png", blue)), false, "image/png: output 1 differs from the expected output (got <image/png "},
		{"count", exact, outs(display("image/png", red)), outs(display("image/png", red), display("image/png", red)), false, "image/png: expected 1 output, got 2"},
		{"missing", exact, outs(display("image/png", red)), nil, false, "no output on image/png"},
	})
	res := Outputs(Rule{Compare: ModeExact, Targets: []string{"image/png"}, ShowExpected: true}, outs(display("image/png", red)), outs(display("image/png", blue)))
	if strings.Contains(res.Observed+res.Expected+res.Diff+res.Message, blue[:20]) || strings.Contains(res.Expected+res.Diff, red[:20]) {
		t.Errorf("base64 leaked into the result: %+v", res)
	}
	if !regexp.MustCompile(`^<image/png \d+ bytes md5 [0-9a-f]{8}>$`).MatchString(res.Observed) {
		t.Errorf("Observed = %q, want a placeholder", res.Observed)
	}
}

// TestMessageNeverShowsExpected runs failing comparisons whose expected
// outputs hold a secret, and checks that only ShowExpected lets it out.
func TestMessageNeverShowsExpected(t *testing.T) {
	t.Parallel()
	const secret = "Xyzzy4821"
	const secretNum = "271828.5"
	cases := []struct {
		name     string
		rule     Rule
		exp, act []*notebook.Output
	}{
		{"exact", Rule{Compare: ModeExact}, so("answer: " + secret + "\n"), so("answer: nope\n")},
		{"exact short", Rule{Compare: ModeExact}, so("a\n" + secret + "\n"), so("a\n")},
		{"tokens", Rule{}, so("the answer is " + secret + "\n"), so("the answer is 42\n")},
		{"tokens missing", Rule{}, so("a " + secret + "\n"), so("a\n")},
		{"tokens tolerance", Rule{ATol: ptr(0.1)}, so(secretNum + "\n"), so("1.5\n")},
		{"numeric", Rule{Compare: ModeNumeric}, so("mean=" + secretNum + "\n"), so("mean=1.5\n")},
		{"numeric word", Rule{Compare: ModeNumeric}, so(secretNum + "\n"), so("nothing\n")},
		{"regex", Rule{Compare: ModeRegex}, so(secret + `\d+`), so("wrong")},
		{"bad regex", Rule{Compare: ModeRegex}, so(secret + "("), so("wrong")},
		{"lines", Rule{Compare: ModeLinesUnordered}, so("a\n" + secret + "\n"), so("a\nb\nc\n")},
		{"lines missing", Rule{Compare: ModeLinesUnordered}, so("a\n" + secret + "\n"), so("a\n")},
		{"evalue", Rule{Compare: ModeError, Ename: "ValueError", Evalue: secret}, nil, outs(raised("ValueError", "other"))},
		{"text/plain", Rule{}, outs(result("text/plain", secret)), outs(result("text/plain", "'x'"))},
		{"missing target", Rule{}, so(secret + "\n"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := Outputs(tc.rule, tc.exp, tc.act)
			if res.Pass {
				t.Fatalf("the case must fail")
			}
			for _, s := range []string{secret, secretNum} {
				if strings.Contains(res.Message, s) || strings.Contains(res.Observed, s) {
					t.Errorf("Message or Observed shows the expected %q: %+v", s, res)
				}
			}
			if res.Expected != "" || res.Diff != "" {
				t.Errorf("Expected/Diff filled without ShowExpected: %+v", res)
			}
			tc.rule.ShowExpected = true
			res = Outputs(tc.rule, tc.exp, tc.act)
			if !strings.Contains(res.Diff, "--- expected") {
				t.Errorf("ShowExpected gives no diff: %+v", res)
			}
			if tc.exp != nil && res.Expected == "" {
				t.Errorf("ShowExpected gives no Expected: %+v", res)
			}
		})
	}
}

func TestResultFields(t *testing.T) {
	t.Parallel()
	t.Run("observed is normalised and labelled", func(t *testing.T) {
		t.Parallel()
		res := Outputs(Rule{}, nil, outs(stdout("50%\r100%\r\n"), result("text/plain", "3"), raised("KeyError", "'k'")))
		want := "[stdout]\n100%\n[text/plain]\n3\n[error]\nKeyError: 'k'\n"
		if res.Observed != want {
			t.Errorf("Observed = %q, want %q", res.Observed, want)
		}
	})
	t.Run("single target is not labelled", func(t *testing.T) {
		t.Parallel()
		res := Outputs(Rule{}, so("a\n"), so("a\n"))
		if !res.Pass || res.Observed != "a\n" || res.Expected != "" || res.Diff != "" {
			t.Errorf("got %+v", res)
		}
	})
	t.Run("observed is capped", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("é", 5000) // 10000 bytes
		res := Outputs(Rule{}, so("x"), so(big))
		if len(res.Observed) > maxShownBytes+100 || !strings.Contains(res.Observed, "[truncated: ") {
			t.Errorf("Observed not capped: %d bytes, tail %q", len(res.Observed), res.Observed[len(res.Observed)-40:])
		}
		if !strings.HasPrefix(res.Observed, "éé") || strings.ContainsRune(res.Observed, '\uFFFD') {
			t.Errorf("cap broke a rune")
		}
	})
	t.Run("diff with show_expected", func(t *testing.T) {
		t.Parallel()
		res := Outputs(Rule{Compare: ModeExact, ShowExpected: true}, so("a\nb\nc\n"), so("a\nB\nc\n"))
		want := "--- expected stdout\n+++ output stdout\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
		if res.Diff != want {
			t.Errorf("Diff =\n%s\nwant\n%s", res.Diff, want)
		}
		if res.Expected != "a\nb\nc\n" {
			t.Errorf("Expected = %q", res.Expected)
		}
	})
	t.Run("diff is capped", func(t *testing.T) {
		t.Parallel()
		var e, a strings.Builder
		for i := range 500 {
			fmt.Fprintf(&e, "line %d\n", i)
			fmt.Fprintf(&a, "LINE %d %s\n", i, strings.Repeat("z", i%300))
		}
		res := Outputs(Rule{Compare: ModeExact, ShowExpected: true}, so(e.String()), so(a.String()))
		if n := strings.Count(res.Diff, "\n"); n > maxDiffLines+1 || len(res.Diff) > maxDiffBytes+100 {
			t.Errorf("diff not capped: %d lines, %d bytes", n, len(res.Diff))
		}
		if !strings.Contains(res.Diff, "diff truncated") {
			t.Errorf("no truncation marker in %q", res.Diff)
		}
	})
}

func TestErrorExpectedFromRule(t *testing.T) {
	t.Parallel()
	r := Rule{Compare: ModeError, Ename: "ValueError", Evalue: "n < 0", ShowExpected: true}
	res := Outputs(r, nil, outs(raised("TypeError", "x")))
	if res.Pass || res.Expected != "ValueError: n < 0" || !strings.Contains(res.Diff, "-ValueError: n < 0\n+TypeError: x") {
		t.Errorf("got %+v", res)
	}
}

func TestParsedRuleEndToEnd(t *testing.T) {
	t.Parallel()
	nb := json.RawMessage(`{"sanitize":[{"regex":"at 0x[0-9a-f]+","replace":"at ADDR"}]}`)
	cell := json.RawMessage(`{"id":"q1","points":2,"compare":"numeric","rtol":1e-3,"targets":["text/plain"]}`)
	r, err := ParseRule(nb, cell)
	if err != nil {
		t.Fatal(err)
	}
	exp := outs(result("text/plain", "(<Model at 0x7f1>, 0.12345)"))
	act := outs(stdout("debug print\n"), result("text/plain", "(<Model at 0x8a2>, 0.12349)"))
	if res := Outputs(r, exp, act); !res.Pass {
		t.Errorf("want pass, got %+v", res)
	}
}

func TestNumberScanning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // pieces, numbers marked #
	}{
		{"[0.1234,", "[ #0.1234 ,"},
		{"tensor([1.,", "tensor([ #1. ,"},
		{"x=-1.5e-05)", "x= #-1.5e-05 )"},
		{"(-inf,", "( #-inf ,"},
		{"nan]", "#nan ]"},
		{"banana", "banana"},
		{"information", "information"},
		{"float32", "float32"},
		{"3-2", "#3 - #2"},
		{"a-5", "a- #5"},
		{"1e", "#1 e"},
		{".5", "#.5"},
		{"1.2.3", "#1.2 .3"},
		{"True", "True"},
		{"0x1F", "#0 x1F"},
		{"α2", "α2"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, tk := range tokenize(tc.in, false, false, true) {
				if tk.isNum {
					got = append(got, "#"+tk.s)
				} else {
					got = append(got, tk.s)
				}
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("pieces(%q) = %q, want %q", tc.in, s, tc.want)
			}
		})
	}
}

func TestCloseEnough(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		e, a, atol, rtol float64
		want             bool
	}{
		{1, 1, 0, 0, true},
		{1, 1.1, 0.1, 0, false}, // 1.1-1 is 0.10000000000000009 in float64, as for the judges
		{1, 1.05, 0.1, 0, true},
		{100, 101, 0, 0.01, true},
		{100, 102, 0, 0.01, false},
		{0, 1e-10, 1e-9, 0, true},
		{nan, nan, 0, 0, true},
		{nan, 1, 1e9, 1e9, false},
		{1, nan, 1e9, 1e9, false},
		{inf, inf, 0, 0, true},
		{-inf, -inf, 0, 0, true},
		{inf, -inf, 1e9, 1e9, false},
		{inf, math.MaxFloat64, 1e300, 1e9, false},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			if got := closeEnough(tc.e, tc.a, tc.atol, tc.rtol); got != tc.want {
				t.Errorf("closeEnough(%v, %v, %v, %v) = %v, want %v", tc.e, tc.a, tc.atol, tc.rtol, got, tc.want)
			}
		})
	}
}
