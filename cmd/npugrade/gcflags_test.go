package main

import (
	"bytes"
	"context"
	"flag"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	t.Parallel()
	good := map[string]int64{"100MiB": 100 << 20, "1GiB": 1 << 30, "2TiB": 2 << 40, "512KiB": 512 << 10, "4096B": 4096,
		"12345": 12345, "off": math.MaxInt64, "OFF": math.MaxInt64}
	for in, want := range good {
		if got, err := parseMemoryLimit(in); err != nil || got != want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5MiB", "1.5GiB", "10MB", "MiB", "9999999999TiB", "lots"} {
		if got, err := parseMemoryLimit(in); err == nil {
			t.Errorf("parseMemoryLimit(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseGCPercent(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"400": 400, "1": 1, "off": -1, "Off": -1} {
		if got, err := parseGCPercent(in); err != nil || got != want {
			t.Errorf("parseGCPercent(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "", "x"} {
		if _, err := parseGCPercent(in); err == nil {
			t.Errorf("parseGCPercent(%q): want an error", in)
		}
	}
}

// Not parallel: it changes the process's GC settings (and puts them back).
func TestGCFlagsApplyAndRestore(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	apply := gcFlags(fs)
	if err := fs.Parse([]string{"--gc-percent", "321", "--gc-memory-limit", "77MiB"}); err != nil {
		t.Fatal(err)
	}
	beforeP, beforeL := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(beforeP)
	beforeRate := runtime.MemProfileRate
	restore, err := apply()
	if err != nil {
		t.Fatal(err)
	}
	p, l := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1) // -1 reads without changing the limit
	debug.SetGCPercent(p)
	rate := runtime.MemProfileRate
	restore()
	if rate != 0 || runtime.MemProfileRate != beforeRate {
		t.Errorf("heap profile rate %d while applied, %d after (was %d); want 0, then as it was", rate, runtime.MemProfileRate, beforeRate)
	}
	if p != 321 || l != 77<<20 {
		t.Errorf("applied GOGC %d, limit %d; want 321, %d", p, l, 77<<20)
	}
	afterP := debug.SetGCPercent(-1)
	debug.SetGCPercent(afterP)
	if afterP != beforeP || debug.SetMemoryLimit(-1) != beforeL {
		t.Errorf("restore left GOGC %d (was %d)", afterP, beforeP)
	}
}

func TestServeRefusesBadGCFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--gc-percent", "0"}, {"--gc-memory-limit", "lots"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"serve", "--db", "sqlite://" + t.TempDir() + "/x.db"}, args...), &out, &errb)
		if code == exitOK || !strings.Contains(errb.String(), args[0]) {
			t.Errorf("serve %v: exit %d, stderr %q; want a usage error naming %s", args, code, errb.String(), args[0])
		}
	}
}

// TestGCFlagsInProcessOnlyWhenAsked: serve run inside a test process
// leaves the process's GC settings alone unless a flag asks.
func TestGCFlagsInProcessOnlyWhenAsked(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	apply := gcFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	before := debug.SetMemoryLimit(-1)
	restore, err := apply()
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("memory limit changed to %d without a flag (ownProcess %v)", got, ownProcess)
	}
}
