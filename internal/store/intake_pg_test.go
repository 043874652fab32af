package store

import (
	"testing"
	"time"
)

// TestPGParams: intake's arguments reach pgconn as Postgres reads them —
// bytes in binary, the rest in text; a nil pointer is NULL and an empty
// string is not; times in UTC to the microsecond (truncated, as pgx's
// own encoding does); a type with no encoding is an error, not a guess.
func TestPGParams(t *testing.T) {
	t.Parallel()
	s, empty := "key", ""
	at := time.Date(2026, 12, 3, 17, 4, 5, 123456789, time.FixedZone("CST", 8*3600))
	vals, formats, err := pgParams([]any{[]byte{0, 1, 2}, "abc", "", &s, (*string)(nil), &empty, 42, int64(-7), at})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"\x00\x01\x02", "abc", "", "key", "", "", "42", "-7", "2026-12-03 09:04:05.123456Z"}
	for i, w := range want {
		if string(vals[i]) != w {
			t.Errorf("argument %d: %q, want %q", i, vals[i], w)
		}
	}
	for i, isNil := range []bool{false, false, false, false, true, false, false, false, false} {
		if (vals[i] == nil) != isNil {
			t.Errorf("argument %d: NULL is %v, want %v", i, vals[i] == nil, isNil)
		}
	}
	for i, f := range formats {
		if want := int16(0); i == 0 && f != 1 || i > 0 && f != want {
			t.Errorf("argument %d: format %d", i, f)
		}
	}
	if _, _, err := pgParams([]any{3.5}); err == nil {
		t.Error("a float64 was encoded; want an error")
	}
}
