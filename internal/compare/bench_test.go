package compare

import (
	"fmt"
	"strings"
	"testing"
)

// bigOutput is ~100 KB of training-log style text with numbers.
func bigOutput(perturb bool) string {
	var b strings.Builder
	for i := 0; b.Len() < 100_000; i++ {
		loss := 1.0 / float64(i+1)
		if perturb {
			loss *= 1 + 1e-9
		}
		fmt.Fprintf(&b, "epoch %d step %d loss %.8f acc [%.4f, %.4f]\r\n", i/10, i, loss, 0.5+loss/4, 0.25)
	}
	return b.String()
}

func BenchmarkOutputs(b *testing.B) {
	exp, act := so(bigOutput(false)), so(bigOutput(true))
	for _, mode := range []string{ModeExact, ModeTokens, ModeNumeric, ModeLinesUnordered} {
		b.Run(mode, func(b *testing.B) {
			r := Rule{Compare: mode, ShowExpected: true}
			b.SetBytes(int64(len(exp[0].Text)))
			for b.Loop() {
				Outputs(r, exp, act)
			}
		})
	}
}
