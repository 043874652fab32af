package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSweepRemovesOrphans: a sandbox whose owner died (a SIGKILLed runner
// never ran Close) is removed with its cgroup, mount and job directory; a
// live one stays.
func TestSweepRemovesOrphans(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	cfg := testConfig(t, func(c *Config) { c.CgroupParent = "npugrade-sweep-test" })
	live, err := cfg.PrepareKernel(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	orphanJob := t.TempDir()
	orphan, err := cfg.PrepareKernel(context.Background(), orphanJob)
	if err != nil {
		t.Fatal(err)
	}
	// Pretend its runner was SIGKILLed: the recorded owner no longer exists.
	if err := os.WriteFile(filepath.Join(orphan.pub, ownerFile), []byte("999999999 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	var cgDirs []string
	if orphan.cg != nil {
		cgDirs = []string{orphan.cg.memDir, orphan.cg.pidsDir}
	}
	n, err := Sweep(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("swept %d sandboxes, want 1", n)
	}
	if _, err := os.Stat(orphan.pub); !os.IsNotExist(err) {
		t.Fatalf("the orphan's directory is still there: %v", err)
	}
	if _, err := os.Stat(orphanJob); !os.IsNotExist(err) {
		t.Fatalf("the orphan's job directory is still there: %v", err)
	}
	for _, d := range cgDirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the orphan's cgroup %s is still there", d)
		}
	}
	if _, err := os.Stat(live.WorkDir); err != nil {
		t.Fatalf("the live sandbox was swept: %v", err)
	}
	orphan.pub, orphan.cg, orphan.mounted = "", nil, false // already gone
	orphan.Close()
}

// TestSweepLeavesUnmarkedJobDirs: the job directory a dead sandbox records
// is removed only when it holds the sandbox's private area: a recorded path
// that points anywhere else (a directory of someone else's, "/") is left
// alone and reported.
func TestSweepLeavesUnmarkedJobDirs(t *testing.T) {
	t.Parallel()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, recorded := range []string{other, "/", "relative/dir", other + "/../" + filepath.Base(other)} {
		pub := t.TempDir()
		if err := os.WriteFile(filepath.Join(pub, jobDirFile), []byte(recorded), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := removeJobDir(pub); err == nil {
			t.Errorf("recorded %q: no error", recorded)
		}
		if _, err := os.Stat(filepath.Join(other, "keep")); err != nil {
			t.Fatalf("recorded %q: the unmarked directory lost its file: %v", recorded, err)
		}
	}
}
