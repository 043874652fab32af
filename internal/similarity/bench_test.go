package similarity

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCompare500 compares a class of 500 solutions of about 60 lines
// each (variations of four ways to solve one task, as a real class has).
func BenchmarkCompare500(b *testing.B) {
	base := docs(b)
	var ds []Doc
	for i := range 500 {
		src := base[i%4].Source
		// Each learner's own names and constants.
		src = strings.ReplaceAll(src, "window", fmt.Sprintf("w%d", i))
		src += fmt.Sprintf("\nresult_%d = moving_average(normalize(list(range(%d))), %d)\n", i, i+3, i%5+1)
		ds = append(ds, Doc{SubmissionID: fmt.Sprint(i), Learner: fmt.Sprintf("l%03d", i), Source: src + src})
	}
	b.ResetTimer()
	for range b.N {
		rep := Compare("ex", "", ds, Options{})
		if rep.Submissions != 500 {
			b.Fatal(rep.Submissions)
		}
	}
}
