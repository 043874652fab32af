package compare

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/notebook"
)

func FuzzOutputs(f *testing.F) {
	f.Add(uint8(0), "a b\nc\n", "a  b\nc", uint8(0))
	f.Add(uint8(2), "[0.1, nan, -inf]\n", "[0.10000001, NaN, -Infinity]\n", uint8(1))
	f.Add(uint8(3), `\d+(`, "12", uint8(2))
	f.Add(uint8(4), "x\ny\n", "y\r\nx\n", uint8(3))
	f.Add(uint8(5), "", "", uint8(4))
	f.Add(uint8(8), "iVBORw0KGgo=", "not base64", uint8(5))
	f.Add(uint8(1), "1e999 1e-999 +.5 -0", "inf 0 0.5 0", uint8(7))
	f.Fuzz(func(t *testing.T, mode uint8, exp, act string, flags uint8) {
		r := Rule{Compare: Modes[int(mode)%len(Modes)], ShowExpected: flags&1 != 0}
		if flags&2 != 0 {
			r.ATol = ptr(0.01)
		}
		if flags&4 != 0 {
			r.CaseSensitive = ptr(flags&8 != 0)
		}
		if flags&16 != 0 {
			r.SpaceChangeSensitive = ptr(true)
		}
		if flags&32 != 0 {
			r.Targets = []string{"stdout", "text/plain", "image/png", "stderr"}
		}
		build := func(s string) []*notebook.Output {
			var o []*notebook.Output
			for i, p := range strings.Split(s, "\x00") {
				switch i % 5 {
				case 0:
					o = append(o, stdout(p))
				case 1:
					o = append(o, result("text/plain", p))
				case 2:
					o = append(o, display("image/png", p))
				case 3:
					o = append(o, stream("stderr", p))
				default:
					o = append(o, raised(p, p))
				}
			}
			return o
		}
		res := Outputs(r, build(exp), build(act))
		if res.Pass && res.Message != "" {
			t.Errorf("pass with message %q", res.Message)
		}
		if !res.Pass && res.Message == "" {
			t.Errorf("failure without message")
		}
		if len(res.Observed) > maxShownBytes+64 || len(res.Expected) > maxShownBytes+64 || len(res.Diff) > maxDiffBytes+64 {
			t.Errorf("caps exceeded: %d %d %d", len(res.Observed), len(res.Expected), len(res.Diff))
		}
		if !r.ShowExpected && (res.Expected != "" || res.Diff != "") {
			t.Errorf("expected side shown without ShowExpected")
		}
		// Equal sides must pass in the modes that compare output text.
		switch r.Mode() {
		case ModeExact, ModeTokens, ModeNumeric, ModeLinesUnordered:
		default:
			return
		}
		if exp == act && !res.Pass {
			t.Errorf("equal outputs rejected in mode %s: %s", r.Mode(), res.Message)
		}
	})
}

func FuzzParseRule(f *testing.F) {
	f.Add([]byte(`{"compare":"numeric","atol":1e-3}`), []byte(`{"id":"q1","rtol":0.1,"sanitize":[{"regex":"\\d+","replace":"N"}]}`))
	f.Add([]byte(`null`), []byte(`{"targets":["stdout","text/html"],"case_sensitive":false}`))
	f.Add([]byte(`[]`), []byte(`{"compare":7,"sanitize":[{"regex":"("}],"x":null}`))
	f.Add([]byte(``), []byte(`{"ename":"ValueError","evalue":"bad","compare":"error","show_expected":true}`))
	f.Fuzz(func(t *testing.T, nb, cell []byte) {
		r, err := ParseRule(nb, cell)
		if err != nil {
			if !reflect.DeepEqual(r, Rule{}) {
				t.Errorf("rule on error is not zero: %+v", r)
			}
			return
		}
		if r.Compare == "" || len(r.Targets) == 0 {
			t.Errorf("defaults missing: %+v", r)
		}
		if (r.ATol != nil && *r.ATol < 0) || (r.RTol != nil && *r.RTol < 0) {
			t.Errorf("negative tolerance accepted: %+v", r)
		}
		for _, s := range r.Sanitize {
			if s.Regex == nil {
				t.Errorf("nil sanitizer regex")
			}
		}
		_ = Outputs(r, so("1 a\n"), so("1 b\n"))
	})
}

func FuzzNormalize(f *testing.F) {
	f.Add("a\r\nb", "10%\r100%\n", "ab\b\bc", uint8(0))
	f.Add("\x1b[31mred\x1b[0m", "\x1b]0;t\x07", "\r\r\n\b", uint8(3))
	f.Add("é\rx", "\xff\xfe\r", "", uint8(9))
	f.Fuzz(func(t *testing.T, a, b, c string, layout uint8) {
		var in []*notebook.Output
		for i, s := range []string{a, b, c} {
			switch (int(layout) >> (2 * i)) & 3 {
			case 0:
				in = append(in, stdout(s))
			case 1:
				in = append(in, stream("stderr", s))
			case 2:
				in = append(in, result("text/plain", s))
			default:
				in = append(in, nil, raised("E", s))
			}
		}
		got := Normalize(in)
		if again := Normalize(got); !reflect.DeepEqual(again, got) {
			t.Errorf("Normalize is not idempotent")
		}
		for _, o := range got {
			if o.OutputType == notebook.OutputStream && strings.ContainsAny(string(o.Text), "\r\b\x1b") {
				t.Errorf("control characters left in %q", o.Text)
			}
		}
		if utf8.ValidString(a) && utf8.ValidString(b) && utf8.ValidString(c) {
			for _, target := range []string{"stdout", "stderr", "text/plain"} {
				if s, _ := Text(in, target); !utf8.ValidString(s) {
					t.Errorf("valid UTF-8 became invalid: %q", s)
				}
			}
		}
	})
}
