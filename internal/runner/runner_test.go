package runner

import (
	"testing"
	"time"
)

func TestCapDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ d, max, want time.Duration }{
		{30 * time.Second, 0, 30 * time.Second},                // no cap: the lease's value
		{30 * time.Second, 10 * time.Second, 10 * time.Second}, // capped
		{5 * time.Second, 10 * time.Second, 5 * time.Second},   // under the cap
		{0, 10 * time.Second, 10 * time.Second},                // unset lease value takes the cap
		{0, 0, 0},
	} {
		if got := capDuration(tc.d, tc.max); got != tc.want {
			t.Errorf("capDuration(%v, %v) = %v, want %v", tc.d, tc.max, got, tc.want)
		}
	}
}
