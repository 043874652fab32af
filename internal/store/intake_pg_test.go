package store

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
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

// TestIntakeStatementArguments: intake's statement takes each argument
// where the plain statement has it, and its name and text depend on the
// upload's shape alone (not on the order or sizes of its blobs).
func TestIntakeStatementArguments(t *testing.T) {
	t.Parallel()
	now := time.Now()
	big, small := make([]byte, 300), make([]byte, 20)
	for _, attempt := range []bool{false, true} {
		r := intakeRows{blobs: []blobRow{{SHA256: "u", Size: 300, Data: big, CreatedAt: now}, {SHA256: "p", Size: 20, Data: small, CreatedAt: now}},
			sub: submissionRow{ID: "s1", UserID: 7, ExerciseID: "ch1", NotebookSHA256: "u", CreatedAt: now},
			job: jobRow{Kind: "grade", PayloadSHA256: "p"}, attempt: attempt}
		name, q, args := intakeStatement([]intakeRows{r})
		if strings.Contains(q, "?") {
			t.Fatalf("placeholders left in %s", q)
		}
		if q != numbered(intakeText(1, 2, map[bool]int{false: 0, true: 1}[attempt])) {
			t.Fatalf("the text remembered for %s is another:\n%s", name, q)
		}
		// The blobs in the other order: the same statement.
		swapped := r
		swapped.blobs = []blobRow{r.blobs[1], r.blobs[0]}
		if name2, q2, _ := intakeStatement([]intakeRows{swapped}); name2 != name || q2 != q {
			t.Errorf("the blobs in the other order make another statement: %s", name2)
		}
		// The arguments as the statement reads them, placeholder by
		// placeholder, are those of its plain form.
		var got []any
		for _, m := range regexp.MustCompile(`\$(\d+)`).FindAllStringSubmatch(q, -1) {
			i, _ := strconv.Atoi(m[1])
			got = append(got, args[i-1])
		}
		want := []any{"u", int64(300), big, now, "p", int64(20), small, now}
		if len(got) != len(args) || len(got) < len(want) {
			t.Fatalf("%d placeholders for %d arguments", len(got), len(args))
		}
		if !reflect.DeepEqual(got[:len(want)], want) {
			t.Errorf("the blob rows read %v, want %v", got[:len(want)], want)
		}
		if got[len(want)] != "s1" || got[len(got)-1] != args[len(args)-1] {
			t.Errorf("the submission and job arguments moved: %v", got[len(want):])
		}
	}
}

// TestIntakeStatementOfSeveralUploads: uploads written together send each
// distinct blob once, and the statement has a row per submission, job
// and attempt asked for, every argument read by one placeholder.
func TestIntakeStatementOfSeveralUploads(t *testing.T) {
	t.Parallel()
	now := time.Now()
	up := func(id, upload string, attempt bool) intakeRows {
		return intakeRows{blobs: []blobRow{{SHA256: upload, Data: []byte(upload)}, {SHA256: "p", Data: []byte("p")}},
			sub: submissionRow{ID: id, CreatedAt: now}, job: jobRow{Kind: "grade", PayloadSHA256: "p"}, attempt: attempt}
	}
	_, q, args := intakeStatement([]intakeRows{up("s1", "u1", true), up("s2", "u2", false), up("s3", "u3", true)})
	for what, want := range map[string]int{"INSERT INTO blobs": 1, "(?": 0, "$": len(args), "RETURNING id, submission_id": 1} {
		if n := strings.Count(q, what); n != want {
			t.Errorf("%q %d times, want %d in\n%s", what, n, want, q)
		}
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`INSERT INTO (\w+) \([a-z_, 0-9]+\) VALUES `).FindAllStringSubmatchIndex(q, -1) {
		got[q[m[2]:m[3]]] = valueTuples(q[m[1]:])
	}
	if want := map[string]int{"blobs": 4, "submissions": 3, "upload_attempts": 2, "jobs": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("rows per table %v, want %v", got, want)
	}
	for i := 1; i <= len(args); i++ {
		if !regexp.MustCompile(`\$` + strconv.Itoa(i) + `\b`).MatchString(q) {
			t.Errorf("argument %d is read by no placeholder", i)
		}
	}
}

// valueTuples counts the tuples of the VALUES list that v starts with
// (a tuple may hold parenthesised subqueries: a job's turn).
func valueTuples(v string) int {
	n, depth := 0, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '(':
			if depth == 0 {
				n++
			}
			depth++
		case ')':
			depth--
		default:
			if depth == 0 && !strings.HasPrefix(v[i:], ", (") && v[i] != ' ' {
				return n
			}
		}
	}
	return n
}
