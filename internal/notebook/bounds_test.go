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

// An upload large enough to hold more values than allowed is refused by
// prescan before anything is decoded: the one-pass decode, which
// enforces the bounds itself, would build every value up to the bound
// first (a hostile upload of megabytes then cost tens of MB). A smaller
// one is decoded at once, and refused as prescan would refuse it.
func TestLargeUploadsPrescannedFirst(t *testing.T) {
	lim := Limits{MaxValues: 1000}
	over := `{"cells": [], "metadata": {"x": [` + strings.Repeat("0,", 3000) + `0]}, "nbformat": 4, "nbformat_minor": 5}`
	var err error
	allocs := testing.AllocsPerRun(5, func() { _, err = Parse([]byte(over), lim) })
	if err == nil || !strings.Contains(err.Error(), "more than 1000 JSON values") {
		t.Fatalf("Parse: %v, want the values bound", err)
	}
	if allocs > 50 {
		t.Errorf("refusing %d bytes over the values bound took %.0f allocations: decoded before prescan", len(over), allocs)
	}
	cells := `{"cells": [` + strings.Repeat(`{"cell_type": "raw", "metadata": {}, "source": ""},`, 5) + `{}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}`
	if _, err := Parse([]byte(cells), Limits{MaxCells: 5}); err == nil || !strings.Contains(err.Error(), "more than 5 cells") {
		t.Errorf("Parse of 6 cells with a bound of 5: %v", err)
	}
}
