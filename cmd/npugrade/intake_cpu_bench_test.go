package main

import (
	"database/sql"
	"net/url"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// backendCPU follows the CPU time of the Postgres backends serving one
// database, read from /proc/PID/schedstat when Postgres runs on this
// machine. It gives the intake benchmark Postgres's CPU per transaction
// for the server and for pgbench alike, a measure that other load on the
// machine hardly moves, unlike the throughput ratio. Where it cannot see
// the backends it reports 0.
//
// It costs the benchmark little: the backends are found through
// pg_stat_activity on the admin database (so the query's own backend is
// not counted) every 200 ms, and each one's schedstat stays open and is
// re-read with one pread every 20 ms. A backend's time from its last
// reading to its exit (under 20 ms) is not counted.
type backendCPU struct {
	db         string
	admin      *sql.DB
	procs      map[int]*backendProc
	stop, done chan struct{}
}

type backendProc struct {
	f          *os.File // nil: gone
	base, last time.Duration
}

// watchBackends starts following the backends of dbURL's database.
func watchBackends(dbURL string) *backendCPU {
	u, _ := url.Parse(dbURL)
	w := &backendCPU{db: strings.TrimPrefix(u.Path, "/"), procs: map[int]*backendProc{}, stop: make(chan struct{}), done: make(chan struct{})}
	if dsn := os.Getenv(storetest.EnvDSN); dsn != "" {
		w.admin, _ = sql.Open("pgx", dsn)
	}
	w.discover(true)
	go w.loop()
	return w
}

func (w *backendCPU) loop() {
	defer close(w.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-w.stop:
			w.sample()
			return
		case <-tick.C:
			if i%10 == 0 {
				w.discover(false)
			}
			w.sample()
		}
	}
}

// discover opens the schedstat of backends not yet followed; at the start
// their time so far is the base, later ones count from birth (connecting
// is part of the work).
func (w *backendCPU) discover(start bool) {
	if w.admin == nil {
		return
	}
	rows, err := w.admin.Query("SELECT pid FROM pg_stat_activity WHERE datname = $1", w.db)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil || w.procs[pid] != nil {
			continue
		}
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/schedstat")
		if err != nil {
			continue
		}
		p := &backendProc{f: f}
		if start {
			p.base = readSchedstat(f)
			p.last = p.base
		}
		w.procs[pid] = p
	}
}

func (w *backendCPU) sample() {
	for _, p := range w.procs {
		if p.f == nil {
			continue
		}
		if t := readSchedstat(p.f); t > p.last {
			p.last = t
		} else if t == 0 { // exited
			p.f.Close()
			p.f = nil
		}
	}
}

// readSchedstat is the run time (ns) in an open /proc/PID/schedstat, 0
// once the process is gone.
func readSchedstat(f *os.File) time.Duration {
	var buf [96]byte
	n, _ := f.ReadAt(buf[:], 0)
	s := string(buf[:n])
	if i := strings.IndexByte(s, ' '); i > 0 {
		if ns, err := strconv.ParseInt(s[:i], 10, 64); err == nil {
			return time.Duration(ns)
		}
	}
	return 0
}

// Stop ends the watch and returns the backends' CPU time since the start.
func (w *backendCPU) Stop() time.Duration {
	close(w.stop)
	<-w.done
	var sum time.Duration
	for _, p := range w.procs {
		sum += p.last - p.base
		if p.f != nil {
			p.f.Close()
		}
	}
	if w.admin != nil {
		w.admin.Close()
	}
	return sum
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
