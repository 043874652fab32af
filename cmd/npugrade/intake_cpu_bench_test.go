package main

import (
	"bytes"
	"net/url"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// backendCPU follows the CPU time of the Postgres backends serving one
// database, read from /proc when Postgres runs on this machine (a
// backend's process title names its database). It gives the intake
// benchmark Postgres's CPU per transaction for the server and for pgbench
// alike, a measure that other load on the machine hardly moves, unlike
// the throughput ratio. Where /proc shows no backend it reports 0.
type backendCPU struct {
	db         string
	mu         sync.Mutex
	base, last map[int]time.Duration // per backend: at the start (0 if born later), last seen
	other      map[int]bool          // pids that are not Postgres
	stop, done chan struct{}
}

// watchBackends starts following the backends of dbURL's database.
func watchBackends(dbURL string) *backendCPU {
	u, _ := url.Parse(dbURL)
	w := &backendCPU{db: strings.TrimPrefix(u.Path, "/"), base: map[int]time.Duration{}, last: map[int]time.Duration{}, other: map[int]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, pid := range w.backends() {
		t := procCPU(pid)
		w.base[pid], w.last[pid] = t, t
	}
	go w.loop()
	return w
}

// loop reads the known backends' CPU every 10 ms (a backend's time is
// lost from its last reading to its exit) and looks for new backends
// every 100 ms (their time counts from birth: connecting is part of the
// work).
func (w *backendCPU) loop() {
	defer close(w.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			w.sample(true)
			return
		case <-tick.C:
			w.sample(i%10 == 0)
		}
	}
}

func (w *backendCPU) sample(discover bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if discover {
		for _, pid := range w.backends() {
			if _, ok := w.last[pid]; !ok {
				w.last[pid] = 0
			}
		}
	}
	for pid := range w.last {
		if t := procCPU(pid); t > w.last[pid] {
			w.last[pid] = t
		}
	}
}

// Stop ends the watch and returns the backends' CPU time since the start.
func (w *backendCPU) Stop() time.Duration {
	close(w.stop)
	<-w.done
	var sum time.Duration
	for pid, t := range w.last {
		sum += t - w.base[pid]
	}
	return sum
}

// backends lists the pids of the processes titled "postgres: USER DB ...".
// It reads /proc's listing once and the command line only of processes
// not yet known to be something else than Postgres, so watching costs
// the benchmark little CPU.
func (w *backendCPU) backends() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || w.other[pid] {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if !bytes.Contains(b, []byte("postgres")) {
			w.other[pid] = true // not Postgres (a new backend's title starts as the postmaster's command)
			continue
		}
		if f := strings.Fields(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))); len(f) >= 3 && f[0] == "postgres:" && f[2] == w.db {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procCPU is a process's CPU time: /proc/PID/schedstat's run time (ns),
// or utime+stime from /proc/PID/stat (clock ticks, 10 ms) without it.
func procCPU(pid int) time.Duration {
	p := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(p + "/schedstat"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil && ns > 0 {
				return time.Duration(ns)
			}
		}
	}
	b, err := os.ReadFile(p + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // after "pid (comm)"
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// gcCPU is the CPU time this process's garbage collector has used (the
// runtime's estimate; marking on otherwise idle Ps, which the runtime
// counts by wall time, left out).
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"},
		{Name: "/cpu/classes/gc/pause:cpu-seconds"}}
	metrics.Read(s)
	var sum float64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindFloat64 {
			sum += v.Value.Float64()
		}
	}
	return time.Duration(sum * float64(time.Second))
}
