package notebook

import (
	"encoding/json"
	"strings"
	"testing"
)

// The fast readers of MultilineString give exactly what encoding/json
// gives, or step aside.
func TestMultilineStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []string{
		`""`, `"plain"`, `"line\n"`, `"tab\tquote\"slash\/back\\"`, `"\b\f\r"`, `"é 填充"`,
		`"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"\u0000"`, "\"a\xffb\"",
		`[]`, `[ ]`, `["a\n", "b"]`, "[\n  \"x\\n\",\n  \"y\"\n]", `["\ud83d\ude00", "z"]`, `["a", 1]`,
		`{"k": 1}`, `"` + strings.Repeat("填充 padding\\n", 1000) + `"`,
	}
	for _, c := range cases {
		var want MultilineString
		wantErr := func() error {
			if strings.HasPrefix(c, "[") {
				var parts []string
				err := json.Unmarshal([]byte(c), &parts)
				want = MultilineString(strings.Join(parts, ""))
				return err
			}
			if strings.HasPrefix(c, "{") {
				want = MultilineString(c)
				return nil
			}
			var s string
			err := json.Unmarshal([]byte(c), &s)
			want = MultilineString(s)
			return err
		}()
		var got MultilineString
		err := got.UnmarshalJSON([]byte(c))
		if (err != nil) != (wantErr != nil) || (err == nil && got != want) {
			t.Errorf("%.40q: got %.40q, %v; encoding/json gives %.40q, %v", c, got, err, want, wantErr)
		}
	}
}

func FuzzUnquoteFast(f *testing.F) {
	for _, s := range []string{`"a\nb"`, `"\u00e9"`, `"\ud83d\ude00"`, `"x\\y"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := unquoteFast([]byte(s))
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("%q: fast read %q, encoding/json refuses it: %v", s, got, err)
		}
		if got != want {
			t.Fatalf("%q: fast %q, encoding/json %q", s, got, want)
		}
	})
}
