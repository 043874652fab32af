// Package envtest finds the cpu grading environment for tests that run
// kernels in it. `make test` (scripts/test.sh) builds it once per run with
// `npugrade env build cpu` and sets NPUGRADE_REQUIRE_ENV=1, so there a
// missing environment fails the test instead of skipping it.
package envtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the directory of the cpu environment (holding rootfs/ and
// env.json): $NPUGRADE_TEST_ENV_DIR, else the repository's data/envs/cpu.
func Dir() string {
	if d := os.Getenv("NPUGRADE_TEST_ENV_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "data", "envs", "cpu")
}

// RequireCPU returns the cpu environment's directory, absolute, or skips
// the test when it has not been built (fails under NPUGRADE_REQUIRE_ENV=1).
func RequireCPU(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs(Dir())
	if err == nil {
		_, err = os.Stat(filepath.Join(d, "env.json"))
	}
	if err != nil {
		if os.Getenv("NPUGRADE_REQUIRE_ENV") == "1" {
			t.Fatalf("the cpu grading environment is missing (%v): `npugrade env build cpu` should have built it", err)
		}
		t.Skipf("the cpu grading environment is not built (%v): run `npugrade env build cpu` (make test does)", err)
	}
	return d
}
