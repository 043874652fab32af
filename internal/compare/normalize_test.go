package compare

import (
	"reflect"
	"testing"

	"github.com/npugrade/npugrade/internal/notebook"
)

func TestRenderStream(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain", "hello\nworld\n", "hello\nworld\n"},
		{"CRLF", "a\r\nb\r\n", "a\nb\n"},
		{"CR before LF twice", "a\r\r\nb", "a\nb"},
		{"progress bar", "  0%|          |\r 50%|#####     |\r100%|##########|\ndone\n", "100%|##########|\ndone\n"},
		{"CR overwrites like a terminal", "abcdef\rxy\n", "xycdef\n"},
		{"trailing CR", "50%\r", "50%"},
		{"CR on several lines", "a1\ra2\nb1\rb2\n", "a2\nb2\n"},
		{"backspace erases", "abc\b\bX\n", "aX\n"},
		{"backspace spinner", "working |\b/\b-\b\\\bdone\n", "working done\n"},
		{"backspace stops at newline", "a\n\b\bb", "a\nb"},
		{"backspace at start", "\bx", "x"},
		{"backspace then CR", "ab\bc\rX", "Xc"},
		{"ANSI colours", "\x1b[1;31mred\x1b[0m text\n", "red text\n"},
		{"ANSI OSC title", "\x1b]0;title\x07ok", "ok"},
		{"spliced ESC", "\x1b\x1b[0m[0mx", "[0mx"},
		{"unicode overwrite", "héllo\rwö\n", "wöllo\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := renderStream(tc.in); got != tc.want {
				t.Errorf("renderStream(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := renderStream(renderStream(tc.in)); again != tc.want {
				t.Errorf("not idempotent: %q", again)
			}
		})
	}
}

func TestNormalizeCoalesce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []*notebook.Output
		want []*notebook.Output
	}{
		{"chunks of one stream", outs(stdout("a"), stdout("b\n"), stdout("c\n")), outs(stdout("ab\nc\n"))},
		{"interleaved streams coalesce per name", outs(stdout("1\n"), stream("stderr", "w1\n"), stdout("2\n"), stream("stderr", "w2\n")),
			outs(stdout("1\n2\n"), stream("stderr", "w1\nw2\n"))},
		{"stderr first keeps its place", outs(stream("stderr", "w\n"), stdout("1\n")), outs(stream("stderr", "w\n"), stdout("1\n"))},
		{"display ends a run", outs(stdout("a\n"), display("text/plain", "D"), stdout("b\n")), outs(stdout("a\n"), display("text/plain", "D"), stdout("b\n"))},
		{"CR across chunks", outs(stdout("10%"), stdout("\r"), stdout("100%\n")), outs(stdout("100%\n"))},
		{"CR does not cross a display", outs(stdout("10%"), display("text/plain", "D"), stdout("\r1\n")), outs(stdout("10%"), display("text/plain", "D"), stdout("1\n"))},
		{"nil entries dropped", outs(nil, stdout("a"), nil, stdout("b"), nil), outs(stdout("ab"))},
		{"CRLF in rich text", outs(result("text/plain", "a\r\nb")), outs(result("text/plain", "a\nb"))},
		{"CR CRLF in rich text", outs(result("text/plain", "a\r\r\nb\rc")), outs(result("text/plain", "a\nb\rc"))},
		{"binary data untouched", outs(display("image/png", "iVBO\r\nRw==")), outs(display("image/png", "iVBO\r\nRw=="))},
		{"errors copied", outs(stdout("x"), raised("ValueError", "bad")), outs(stdout("x"), raised("ValueError", "bad"))},
		{"empty", nil, []*notebook.Output{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Normalize(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Normalize =\n%s\nwant\n%s", dump(got), dump(tc.want))
			}
			if again := Normalize(got); !reflect.DeepEqual(again, got) {
				t.Errorf("not idempotent:\n%s", dump(again))
			}
		})
	}
}

func TestNormalizeDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	in := outs(stdout("a\r\n"), result("text/plain", "x\r\ny"))
	Normalize(in)
	if in[0].Text != "a\r\n" || in[1].Data["text/plain"] != "x\r\ny" {
		t.Errorf("input modified: %s", dump(in))
	}
}

func dump(os []*notebook.Output) string {
	s := ""
	for _, o := range os {
		s += "  " + o.OutputType + " " + o.Name + " " + string(o.Text) + " "
		for k, v := range o.Data {
			s += k + "=" + string(v) + " "
		}
		s += o.Ename + "\n"
	}
	return s
}

func TestText(t *testing.T) {
	t.Parallel()
	cell := outs(
		stdout("a\n"),
		stream("stderr", "warn\n"),
		result("text/plain", "1"),
		display("text/plain", "2"),
		stdout("b\n"),
		display("text/html", "<b>x</b>"),
		&notebook.Output{OutputType: notebook.OutputDisplayData, Data: map[string]notebook.MultilineString{"text/plain": "3\n", "text/html": "<i>y</i>"}},
		raised("ValueError", "bad"),
	)
	tests := []struct {
		target string
		want   string
		ok     bool
	}{
		{"stdout", "a\nb\n", true},
		{"stderr", "warn\n", true},
		{"text/plain", "1\n2\n3\n", true},
		{"text/html", "<b>x</b>\n<i>y</i>", true},
		{"image/png", "", false},
		{"error", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			t.Parallel()
			got, ok := Text(cell, tc.target)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Text(%s) = %q, %v; want %q, %v", tc.target, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFirstError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []*notebook.Output
		want string
	}{
		{"none", outs(stdout("x")), ""},
		{"nil slice", nil, ""},
		{"first of two", outs(nil, stdout("x"), raised("KeyError", "'a'"), raised("ValueError", "")), "KeyError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := FirstError(tc.in)
			got := ""
			if e != nil {
				got = e.Ename
			}
			if got != tc.want {
				t.Errorf("FirstError = %q, want %q", got, tc.want)
			}
		})
	}
}
