package execution_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// BenchmarkSpareCPU measures, in the cpu grading environment with the
// production preload, the CPU time of a warm spare's start (s: driver,
// sandbox, kernel and its imports, everything until it is ready) and of a
// job run in it (e: from hand-over to result), on the exec path and on the
// fork path (kernel and driver forked from zygotes, which start once,
// before the timed runs). It counts every process it starts: the
// benchmark moves itself into a cpuacct cgroup of its own and the jobs'
// cgroups below it (root, cgroup v1 with a cpuacct hierarchy, or v2).
// It prints the ratio of two slots to one that s and e predict for a
// 10-job burst on 2 cores (see cmd/npugrade's BenchmarkBurst).
func BenchmarkSpareCPU(b *testing.B) {
	requireExecution(b)
	rootfs := filepath.Join(envtest.RequireCPU(b), "rootfs")
	cg := selfCPUCgroup(b)
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		b.Fatal(err)
	}
	ex, _ := cat.Get("ch1")
	rebuilt, _, err := notebook.RebuildSeeded(ex.Answer, ex.Answer.Clone(), ex.SeedFor("bench"))
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := notebook.Encode(rebuilt)
	preload := execution.AutoPreload("cpu", true) // what a runner in the environment preloads
	for _, path := range []string{"exec", "fork"} {
		b.Run(path, func(b *testing.B) {
			cfg := sandbox.DefaultConfig()
			cfg.RootFS = rootfs
			cfg.BaseDir = filepath.Join(shortTemp(b), "b")
			cfg.CgroupParent = cg.jobs
			e := &execution.Executor{Profile: "cpu", WorkRoot: shortTemp(b), Isolation: &cfg}
			if path == "fork" {
				kz, dz := &sandbox.Zygote{Preload: preload}, &execution.DriverZygote{}
				defer kz.Close()
				defer dz.Close()
				cfg.Zygote, e.DriverZygote = kz, dz
				w, err := e.Prestart(context.Background(), preload, nil) // starts the zygotes
				if err != nil {
					b.Fatal(err)
				}
				w.Close()
				if kz.Kernels() == 0 || dz.Drivers() == 0 {
					b.Fatal("the fork path fell back to exec")
				}
				b.Logf("zygotes: kernel %d MiB, driver %d MiB resident", kz.Memory()>>20, dz.Memory()>>20)
			}
			var s, j time.Duration
			for i := 0; i < b.N; i++ {
				t0 := cg.usage(b)
				w, err := e.Prestart(context.Background(), preload, nil)
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(300 * time.Millisecond) // let the spare settle
				t1 := cg.usage(b)
				res, err := w.Execute(context.Background(), payload, execution.Options{CellTimeout: time.Minute})
				if err != nil || res.Killed {
					b.Fatalf("%v %s\n%s", err, res.Reason, res.Log)
				}
				t2 := cg.usage(b)
				s += t1 - t0
				j += t2 - t1
			}
			sv, ev := (s / time.Duration(b.N)).Seconds(), (j / time.Duration(b.N)).Seconds()
			b.ReportMetric(sv, "cpu-s/start")
			b.ReportMetric(ev, "cpu-s/job")
			b.ReportMetric(burstRatio(sv, ev), "predicted-ratio")
			fmt.Printf("%s path: a spare's start %.3f s CPU, a ch1 job %.3f s CPU: predicted 2-slot/1-slot burst ratio %.2f\n", path, sv, ev, burstRatio(sv, ev))
		})
	}
}

// burstRatio is the 2-slot/1-slot ratio a CPU-bound 10-job burst reaches
// on 2 cores with one spare per slot: one slot grades a job per max(s, e)
// (its next spare starts on the other core); two slots run 10 jobs and 8
// refills on both cores.
func burstRatio(s, e float64) float64 {
	one := 10 * max(s, e)
	two := max((10*e+8*s)/2, 5*e)
	return one / two
}

// cpuCgroup is a cgroup holding the benchmark process (hence everything
// it starts) with the jobs' cgroups below it.
type cpuCgroup struct {
	file string // cpuacct.usage (v1, ns) or cpu.stat (v2, usage_usec)
	jobs string // CgroupParent for the jobs, relative to each hierarchy
}

func selfCPUCgroup(b *testing.B) cpuCgroup {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("measuring every process's CPU needs root (cgroups)")
	}
	name := fmt.Sprintf("npugrade-bench-%d", os.Getpid())
	move := func(dir string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Skip(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			b.Skip(err)
		}
	}
	// Back to the root at the end, and the cgroups removed.
	cleanup := func(root string, dirs ...string) {
		b.Cleanup(func() {
			_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
			// The zygotes' processes die of their SIGKILL a moment later.
			for _, d := range dirs {
				for i := 0; i < 30; i++ {
					if err := os.Remove(d); err == nil || errors.Is(err, fs.ErrNotExist) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpuacct/cpuacct.usage"); err == nil {
		dir := filepath.Join("/sys/fs/cgroup/cpuacct", name)
		move(dir)
		// The jobs' cgroups went below name in every v1 hierarchy.
		var dirs []string
		hs, _ := os.ReadDir("/sys/fs/cgroup")
		for _, h := range hs {
			base := filepath.Join("/sys/fs/cgroup", h.Name(), name)
			dirs = append(dirs, filepath.Join(base, "jobs"), base)
		}
		cleanup("/sys/fs/cgroup/cpuacct", dirs...)
		return cpuCgroup{file: filepath.Join(dir, "cpuacct.usage"), jobs: name + "/jobs"}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir := filepath.Join("/sys/fs/cgroup", name)
		move(filepath.Join(dir, "self"))
		cleanup("/sys/fs/cgroup", filepath.Join(dir, "self"), filepath.Join(dir, "jobs"), dir)
		return cpuCgroup{file: filepath.Join(dir, "cpu.stat"), jobs: name + "/jobs"}
	}
	b.Skip("no cpuacct cgroup hierarchy")
	return cpuCgroup{}
}

func (c cpuCgroup) usage(b *testing.B) time.Duration {
	raw, err := os.ReadFile(c.file)
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	if strings.HasSuffix(c.file, "cpu.stat") {
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return time.Duration(n) * time.Microsecond
			}
		}
		b.Fatal("no usage_usec in cpu.stat")
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return time.Duration(n)
}
