package notebook

import (
	"strings"
	"testing"
)

// prescan skips string contents (with their escapes) in jumps: brackets,
// commas and quotes inside strings count for nothing, and a limit is hit
// exactly where the document's own structure reaches it.
func TestPrescanSkipsStrings(t *testing.T) {
	t.Parallel()
	noisy := `[[[{{{ \" ,,, \\ }}]] :`
	deep := func(n int) string {
		return strings.Repeat(`{"k`+noisy+`": [`, n) + `"x \\\" ]]]"` + strings.Repeat("]}", n)
	}
	for _, c := range []struct {
		doc  string
		lim  Limits
		want string // "" = accepted
	}{
		{deep(10), Limits{MaxDepth: 20, MaxValues: 100, MaxCells: 10}, ""},
		{deep(10), Limits{MaxDepth: 19, MaxValues: 100, MaxCells: 10}, "nested deeper than 19"},
		{deep(10), Limits{MaxDepth: 20, MaxValues: 30, MaxCells: 10}, "more than 30 JSON values"},
		{deep(10), Limits{MaxDepth: 20, MaxValues: 31, MaxCells: 10}, ""},
		{`{"cells": [` + strings.Repeat(`{"source": "},{\"cells\": [{},{}]"},`, 3) + `{}], "x": "` + noisy + `"}`, Limits{MaxDepth: 5, MaxValues: 100, MaxCells: 4}, ""},
		{`{"cells": [` + strings.Repeat(`{"source": "},{\"cells\": [{},{}]"},`, 3) + `{}]}`, Limits{MaxDepth: 5, MaxValues: 100, MaxCells: 3}, "more than 3 cells"},
		{`{"a": "unterminated \" [[[[[[`, Limits{MaxDepth: 2, MaxValues: 100, MaxCells: 3}, ""},
	} {
		err := prescan([]byte(c.doc), c.lim)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%.60q with %+v: %v, want %q", c.doc, c.lim, err, c.want)
		}
	}
}

func TestStringEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string // the bytes after an opening quote
		want int
	}{
		{`abc"x`, 3}, {`"`, 0}, {`a\"b"`, 4}, {`a\\"b"`, 3}, {`a\\\"b"`, 6}, {`\\\\"`, 4}, {`abc`, -1},
		{`abc\"`, -1}, {`abc\`, -1}, {`\u0022"`, 6}, {strings.Repeat(`x\n`, 1000) + `"`, 3000}, {`é中\t"`, 7},
	} {
		if got := stringEnd([]byte(c.s), 0); got != c.want {
			t.Errorf("stringEnd(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}
