package notebook

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
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

// appendString reads what encoding/json reads from a string token, up
// to the quote that ends it, or steps aside (always where the token is
// not UTF-8); it leaves what dst held before. stringFast agrees with it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{`a\nb`, `\u00e9 填充`, `\ud83d\ude00`, `x\\y\"`, "tab\there", `\u12`, `\`, `\u12"`, strings.Repeat(`填充 pad\n`, 9), "a\xffb", "12345678\xe5\xa1"} {
		f.Add(s, `, "next": "x"}`)
	}
	f.Fuzz(func(t *testing.T, in, after string) {
		if stringEnd([]byte(`"`+in+`"`), 1) != len(in)+1 {
			return // not the contents of one token
		}
		data := []byte(in + `"` + after)
		got, end, ok := appendString([]byte("prefix"), data)
		if fastEnd, fastOK := stringFast(data); fastOK != ok || fastEnd != end {
			t.Fatalf("%q: stringFast says %d, %v; appendString %d, %v", in, fastEnd, fastOK, end, ok)
		}
		if !ok {
			return
		}
		if !utf8.ValidString(in) {
			t.Fatalf("%q: not UTF-8, taken", in)
		}
		if !strings.HasPrefix(string(got), "prefix") || end != len(in) {
			t.Fatalf("%q: %q, ends at %d", in, got, end)
		}
		if fast, fastOK := unquoteFast([]byte(`"` + in + `"`)); !fastOK || fast != string(got[6:]) {
			t.Fatalf("%q: %q; unquoteFast %q, %v", in, got[6:], fast, fastOK)
		}
		var want string
		if err := json.Unmarshal([]byte(`"`+in+`"`), &want); err != nil || want != string(got[6:]) {
			t.Fatalf("%q: %q; encoding/json %q, %v", in, got[6:], want, err)
		}
	})
}

// plainEnd finds the first quote, backslash or control byte wherever
// it is in the eight-byte words it tests, next to every kind of byte
// and rune, and refuses what is not UTF-8 before it, not after.
func TestPlainEnd(t *testing.T) {
	t.Parallel()
	for _, fill := range []string{"a", " ", "\x7f", "!", "#", "[", "]", "é", "填", "😀", "\xef\xbf\xbd", "a填"} {
		for n := 0; n <= 19; n++ {
			b := []byte(strings.Repeat(fill, n))
			if got, ok := plainEnd(b, 0); got != len(b) || !ok {
				t.Fatalf("%d × %q: %d, %v, want %d", n, fill, got, ok, len(b))
			}
			for pos := 0; pos < len(b); pos += len(fill) {
				for _, sp := range []byte{'\\', '"', 0, 0x1f, '\n', '\t'} {
					c := append(append(bytes.Clone(b[:pos]), sp), b[pos:]...)
					c = append(c, '\\') // a later one does not count
					if got, ok := plainEnd(c, 0); got != pos || !ok {
						t.Fatalf("%q: %d, %v, want %d", c, got, ok, pos)
					}
					for _, bad := range []string{"\xff", "\xe5\xa1", "\xed\xa0\x80", "\xc0\xaf", "\x80"} {
						d := append(append(bytes.Clone(b[:pos]), bad...), c[pos:]...)
						if _, ok := plainEnd(d, 0); ok {
							t.Fatalf("%q: not UTF-8, taken", d)
						}
						d = append(bytes.Clone(c), bad...)
						if got, ok := plainEnd(d, 0); got != pos || !ok {
							t.Fatalf("%q: %d, %v, want %d", d, got, ok, pos)
						}
					}
				}
			}
		}
	}
}

func FuzzValidUTF8(f *testing.F) {
	for _, s := range []string{"ascii only, more than eight", "填充 padding text 填充", "a\xffb", "\xed\xa0\x80 surrogate", "\xef\xbf\xbd", "\xf4\x90\x80\x80", "\xc0\xaf", "12345678\xe5\xa1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validUTF8(b), utf8.Valid(b); got != want {
			t.Fatalf("%q: %v, utf8.Valid %v", b, got, want)
		}
	})
}

// plainEndRef is plainEnd as its doc says it: the first quote,
// backslash or control byte, and whether the text before it is UTF-8.
func plainEndRef(s []byte) (int, bool) {
	j := bytes.IndexFunc(s, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 })
	if j < 0 {
		j = len(s)
	}
	// IndexFunc reads bad bytes as U+FFFD: find the byte itself.
	for k := 0; k < j; k++ {
		if c := s[k]; c == '"' || c == '\\' || c < 0x20 {
			j = k
		}
	}
	return j, utf8.Valid(s[:j])
}

// plainEnd agrees with plainEndRef on text of every kind of rune —
// ASCII, two, three and four bytes, at the edges of their ranges — and
// of bytes that are not UTF-8, at every offset in the words it tests.
func TestPlainEndRandom(t *testing.T) {
	t.Parallel()
	pieces := []string{"a", "bcdefgh", " ", "\x7f", "é", "\u0080", "\u07ff", "填", "\u0800", "\u0fff", "\ud7ff", "\ue000", "\uffff", "\u1000",
		"😀", "\U00010000", "\U0010ffff", "\xff", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
		"\x80", "\xe5\xa1", "\xe5", "\xc3", "\xf0\x9f\x98", "\"", "\\", "\n", "\x00", "\x1f"}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200000; n++ {
		var b []byte
		for k := rng.IntN(12); k >= 0; k-- {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(3) > 0 {
				p = pieces[rng.IntN(9)] // mostly valid text
			}
			b = append(b, p...)
		}
		wantEnd, wantOK := plainEndRef(b)
		got, ok := plainEnd(b, 0)
		if ok != wantOK || (ok && got != wantEnd) {
			t.Fatalf("%q: %d, %v; want %d, %v", b, got, ok, wantEnd, wantOK)
		}
	}
}

func FuzzPlainEnd(f *testing.F) {
	for _, s := range []string{"填充 padding text for the benchmark. ", "abcdefg填", "abcdef填\"", "\xed\x9f\xbf\xed\xa0\x80", "😀😀😀", "\xe0\xa0\x80abcdefgh"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		wantEnd, wantOK := plainEndRef(b)
		got, ok := plainEnd(b, 0)
		if ok != wantOK || (ok && got != wantEnd) {
			t.Fatalf("%q: %d, %v; want %d, %v", b, got, ok, wantEnd, wantOK)
		}
	})
}
