package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBackground: a kernel in the background has the cpu controller's
// lowest weight and the idle class (where the job cgroup has them) and its
// threads the idle scheduling class at nice 19; back in the foreground,
// the default weight, the normal class and nice 0.
func TestBackground(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root (job cgroups, raising a priority again)")
	}
	t.Parallel()
	k, _, _ := prepare(t, testConfig(t, nil))
	if k.cg == nil {
		t.Skip("no job cgroup on this host")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := k.Command(ctx, "/bin/sleep", "60")
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for len(k.threads()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sandboxed process never joined the job cgroup")
		}
		time.Sleep(10 * time.Millisecond)
	}
	check := func(on bool) {
		t.Helper()
		if err := k.Background(on); err != nil {
			t.Fatalf("Background(%v): %v", on, err)
		}
		wantNice, wantV1, wantV2 := 0, v1SharesNormal, v2WeightNormal
		if on {
			wantNice, wantV1, wantV2 = BackgroundNice, v1SharesBackground, v2WeightBackground
		}
		for _, tid := range k.threads() {
			n, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
			if err != nil {
				continue // gone
			}
			// The raw syscall answers 20 - nice.
			if got := 20 - n; got != wantNice {
				t.Errorf("background %v: thread %d nice %d, want %d", on, tid, got, wantNice)
			}
			wantPolicy := uintptr(schedOther)
			if on {
				wantPolicy = schedIdle
			}
			if p, _, e := syscall.Syscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0); e == 0 && p != wantPolicy {
				t.Errorf("background %v: thread %d scheduling policy %d, want %d", on, tid, p, wantPolicy)
			}
		}
		if k.cg.cpuDir == "" {
			t.Log("no cpu controller for the job cgroup here: nice only")
			return
		}
		name, want := "cpu.shares", wantV1
		if k.cg.version == 2 {
			name, want = "cpu.weight", wantV2
		}
		b, err := os.ReadFile(filepath.Join(k.cg.cpuDir, "cpu.idle"))
		switch {
		case errors.Is(err, os.ErrNotExist):
			t.Log("no cpu.idle here (Linux < 5.15): weight only")
		case err != nil || strings.TrimSpace(string(b)) != map[bool]string{true: "1", false: "0"}[on]:
			t.Errorf("background %v: cpu.idle = %q (%v)", on, b, err)
		case on:
			return // an idle group shows the idle class's weight
		}
		b, err = os.ReadFile(filepath.Join(k.cg.cpuDir, name))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("background %v: %s = %q (%v), want %s", on, name, b, err, want)
		}
	}
	check(true)
	check(false)
}
