package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/runner"
	"github.com/npugrade/npugrade/internal/runnerclient"
	"github.com/npugrade/npugrade/internal/runnerproto"
)

// The claim and idle-runner benchmarks measure runners the way
// `npugrade runner` runs them: a fleet of runnerclient clients in a
// process of its own (this test binary started again with envBenchFleet
// set), so that the load generator's CPU is not counted as the server's
// and does not hide in the benchmark's own process. Each runner
// registers (inside the measured window), claims with the default long
// poll and decodes the lease with its notebook, and heartbeats every
// lease it holds every third of the lease TTL the server announced.

// envBenchFleet holds a fleetSpec as JSON: the test binary is then the
// benchmark's runner fleet, not a test run.
const envBenchFleet = "NPUGRADE_BENCH_FLEET"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envBenchFleet); spec != "" {
		os.Exit(runFleet(spec))
	}
	os.Exit(m.Run())
}

// fleetSpec is what a fleet process runs.
type fleetSpec struct {
	Server string   `json:"server"`
	Tokens []string `json:"tokens"` // runner i registers with Tokens[i%len]
	Prefix string   `json:"prefix"` // runner names: Prefix-i
	// Runners is how many runners register.
	Runners int `json:"runners"`
	// Claims, when set, is the claim benchmark: every runner claims until
	// Claims jobs are leased, holding (and heartbeating) each lease to the
	// end. Unset, the runners idle (the real runner loop with no jobs)
	// for IdleFor after registering.
	Claims  int           `json:"claims"`
	IdleFor time.Duration `json:"idle_for"`
}

// fleetResult is what a fleet process prints as its last line.
type fleetResult struct {
	Registered time.Duration   `json:"registered"` // registering every runner took
	Elapsed    time.Duration   `json:"elapsed"`    // from the first registration to the last lease
	Claims     []time.Duration `json:"claims"`     // each lease's claim latency
	Dups       int             `json:"dups"`       // jobs leased twice
	Heartbeats int64           `json:"heartbeats"`
	HeartbeatP time.Duration   `json:"heartbeat_every"`
	Errors     []string        `json:"errors"`
}

// runFleet runs spec (JSON) and prints a fleetResult; it returns the exit status.
func runFleet(spec string) int {
	var s fleetSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "fleet spec:", err)
		return 2
	}
	// A transport per runner, as each `npugrade runner` has its own
	// (runnerclient's default: a long poll's connection is reused).
	hc := func() *http.Client {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		return &http.Client{Timeout: runnerproto.MaxPoll + 30*time.Second, Transport: t}
	}
	// NPUGRADE_BENCH_FLEET_CPUPROFILE=FILE profiles the fleet (pprof).
	if f := os.Getenv("NPUGRADE_BENCH_FLEET_CPUPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil && pprof.StartCPUProfile(out) == nil {
			defer func() { pprof.StopCPUProfile(); _ = out.Close() }()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		res fleetResult
		mu  sync.Mutex
	)
	fail := func(err error) {
		mu.Lock()
		if len(res.Errors) < 20 {
			res.Errors = append(res.Errors, err.Error())
		}
		mu.Unlock()
	}
	start := time.Now()
	clients := make([]*runnerclient.Client, s.Runners)
	var ttl float64
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = &runnerclient.Client{Server: s.Server, Token: s.Tokens[i%len(s.Tokens)], HTTP: hc()}
		wg.Add(1)
		go func(c *runnerclient.Client, i int) {
			defer wg.Done()
			reg, err := c.Register(ctx, fmt.Sprintf("%s-%d", s.Prefix, i), 1, nil, cpuReport())
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			ttl = reg.LeaseTTLSeconds
			mu.Unlock()
		}(clients[i], i)
		if (i+1)%64 == 0 {
			wg.Wait() // registrations arrive as runners start, not all at once
		}
	}
	wg.Wait()
	res.Registered = time.Since(start)
	res.HeartbeatP = time.Duration(ttl / 3 * float64(time.Second))
	fmt.Printf("registered %d\n", res.Registered)
	if len(res.Errors) > 0 {
		return printFleet(res, 1)
	}
	if s.Claims == 0 {
		// The real runner loop; an idle runner never executes anything.
		ictx, icancel := context.WithTimeout(ctx, s.IdleFor)
		defer icancel()
		for _, c := range clients {
			wg.Add(1)
			go func(c *runnerclient.Client) {
				defer wg.Done()
				r := &runner.Runner{Source: c, Slots: 1, Executor: refuseExecutor{}, HeartbeatEvery: res.HeartbeatP,
					Log: slog.New(slog.DiscardHandler)}
				_ = r.Run(ictx)
			}(c)
		}
		wg.Wait()
		return printFleet(res, 0)
	}
	var (
		seen  = map[int64]bool{}
		left  = int64(s.Claims)
		last  time.Time
		hbs   atomic.Int64
		hbCtx = ctx
	)
	claimCtx, stopClaims := context.WithCancel(ctx)
	defer stopClaims()
	var hbWG sync.WaitGroup
	heartbeat := func(c *runnerclient.Client, l *domain.Lease) {
		defer hbWG.Done()
		t := time.NewTicker(res.HeartbeatP)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				if _, err := c.Heartbeat(hbCtx, l); err != nil && hbCtx.Err() == nil {
					fail(err)
					return
				}
				hbs.Add(1)
			}
		}
	}
	for _, c := range clients {
		wg.Add(1)
		go func(c *runnerclient.Client) {
			defer wg.Done()
			for claimCtx.Err() == nil {
				t0 := time.Now()
				l, err := c.Claim(claimCtx)
				d := time.Since(t0)
				if claimCtx.Err() != nil {
					return
				}
				if err != nil {
					fail(err)
					return
				}
				if l == nil {
					continue
				}
				if len(l.Notebook) == 0 {
					fail(fmt.Errorf("job %d was leased without its notebook", l.JobID))
				}
				hbWG.Add(1)
				go heartbeat(c, l)
				mu.Lock()
				res.Claims = append(res.Claims, d)
				if seen[l.JobID] {
					res.Dups++
				}
				seen[l.JobID] = true
				last = time.Now()
				left--
				if left <= 0 {
					stopClaims()
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	res.Elapsed = last.Sub(start)
	cancel()
	hbWG.Wait()
	res.Heartbeats = hbs.Load()
	return printFleet(res, 0)
}

func printFleet(res fleetResult, code int) int {
	b, _ := json.Marshal(res)
	fmt.Printf("result %s\n", b)
	return code
}

// refuseExecutor stands for an executor in an idle fleet, which never
// leases a job.
type refuseExecutor struct{}

func (refuseExecutor) Execute(context.Context, []byte, execution.Options) (domain.ExecutionResult, error) {
	return domain.ExecutionResult{}, errors.New("an idle benchmark runner was given a job")
}

// benchFleet is a running fleet process.
type benchFleet struct {
	cmd        *exec.Cmd
	registered chan time.Duration
	result     chan fleetResult
}

// startFleet starts this test binary as a runner fleet.
func startFleet(b *testing.B, spec fleetSpec) *benchFleet {
	b.Helper()
	raw, _ := json.Marshal(spec)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envBenchFleet+"="+string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	f := &benchFleet{cmd: cmd, registered: make(chan time.Duration, 1), result: make(chan fleetResult, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "registered "); ok {
				var d time.Duration
				_, _ = fmt.Sscan(v, &d)
				f.registered <- d
			}
			if v, ok := strings.CutPrefix(line, "result "); ok {
				var r fleetResult
				if err := json.Unmarshal([]byte(v), &r); err != nil {
					r.Errors = append(r.Errors, "decode the fleet's result: "+err.Error())
				}
				f.result <- r
			}
		}
		close(f.registered)
		close(f.result)
	}()
	return f
}

// wait waits for the fleet's result and exit, and returns the result
// and the fleet's CPU time.
func (f *benchFleet) wait(b *testing.B) (fleetResult, time.Duration) {
	b.Helper()
	r, ok := <-f.result
	if err := f.cmd.Wait(); err != nil || !ok {
		b.Fatalf("runner fleet: %v (result: %v)", err, ok)
	}
	for _, e := range r.Errors {
		b.Errorf("runner fleet: %s", e)
	}
	return r, f.cmd.ProcessState.UserTime() + f.cmd.ProcessState.SystemTime()
}
