package main

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Garbage collector settings of serve. Intake allocates a few
// hundred KB per 100 KB upload (the body, the parsed notebook, the
// rebuilt one) and keeps almost none of it, so with Go's default GOGC=100
// the collector ran about every 2 × a small live heap and took a large
// share of intake's CPU. A higher GOGC collects less often; the soft
// memory limit keeps the heap, and so RSS, bounded all the same (the
// collector runs sooner as the limit nears).
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = "100MiB"
)

// ownProcess is set by main: serve runs as the npugrade process. Tests
// and benchmarks run serve inside their own process, many servers at
// once; there the GC settings, which are the whole process's, change only
// when a flag asks (the intake benchmark passes the defaults).
var ownProcess bool

// gcFlags registers --gc-percent and --gc-memory-limit and returns a
// function that applies them to this process and returns one that puts
// back the settings it replaced. GOGC and GOMEMLIMIT in the environment
// change the defaults.
func gcFlags(fs *flag.FlagSet) func() (restore func(), err error) {
	pct := fs.String("gc-percent", envOr("GOGC", strconv.Itoa(defaultGCPercent)),
		"garbage collection target: the heap grows by this percentage of the live heap between collections (Go's GOGC; off: only --gc-memory-limit triggers a collection)")
	limit := fs.String("gc-memory-limit", envOr("GOMEMLIMIT", defaultMemoryLimit),
		"soft limit on the Go runtime's memory (Go's GOMEMLIMIT: bytes, or with a unit B, KiB, MiB, GiB, TiB; off: none); the collector runs harder as it nears, so RSS stays bounded; raise it if the live heap of a large deployment comes near it")
	return func() (func(), error) {
		set := ownProcess
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "gc-percent" || f.Name == "gc-memory-limit" })
		if !set {
			return func() {}, nil
		}
		p, err := parseGCPercent(*pct)
		if err != nil {
			return nil, fmt.Errorf("--gc-percent: %w", err)
		}
		l, err := parseMemoryLimit(*limit)
		if err != nil {
			return nil, fmt.Errorf("--gc-memory-limit: %w", err)
		}
		oldP, oldL, oldRate := debug.SetGCPercent(p), debug.SetMemoryLimit(l), runtime.MemProfileRate
		// No heap profile of serve is ever read (it offers none), and at
		// Go's default of one sample per 512 KB allocated intake paid a
		// stack walk for about every upload it read.
		runtime.MemProfileRate = 0
		return func() { debug.SetGCPercent(oldP); debug.SetMemoryLimit(oldL); runtime.MemProfileRate = oldRate }, nil
	}
}

// parseGCPercent reads a GOGC value: a percentage of at least 1, or off.
func parseGCPercent(s string) (int, error) {
	if strings.EqualFold(s, "off") {
		return -1, nil
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 {
		return 0, fmt.Errorf("%q is not a percentage of at least 1 or off", s)
	}
	return p, nil
}

// parseMemoryLimit reads a GOMEMLIMIT value: bytes with an optional unit
// (B, KiB, MiB, GiB, TiB), or off.
func parseMemoryLimit(s string) (int64, error) {
	if strings.EqualFold(s, "off") {
		return math.MaxInt64, nil
	}
	num, mult := s, int64(1)
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			num, mult = n, int64(1)<<(10*(4-i))
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a positive size in bytes (units B, KiB, MiB, GiB, TiB) or off", s)
	}
	return n * mult, nil
}
