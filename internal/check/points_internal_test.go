package check

import "testing"

// TestPointsForPeople: shares of a point in thirds print with four
// decimals at most; whole and half points as they are.
func TestPointsForPeople(t *testing.T) {
	t.Parallel()
	for x, want := range map[float64]string{8.0 / 3: "2.6667", 3: "3", 2.5: "2.5", 0: "0", 1.0 / 3 * 3: "1", 27: "27"} {
		if got := points(x); got != want {
			t.Errorf("points(%v) = %q, want %q", x, got, want)
		}
	}
}
