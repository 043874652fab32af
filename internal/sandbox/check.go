package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Check tells whether this host can sandbox kernels with cfg: it prepares a
// throw-away job, runs `python -c ...` through the real wrapper and checks
// that it ran in a new PID namespace without network, as the expected uid.
// A host where cgroups are unusable passes with a warning (memory falls
// back to RLIMIT_AS); a host where bwrap cannot create its namespaces
// fails. With Mode "none" it only validates the config. A runner must
// refuse jobs when Check fails.
func Check(cfg Config) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("sandbox check: config: %w", err)
	}
	if cfg.Mode == ModeNone {
		slog.Warn("sandbox: mode none, learner code runs WITHOUT isolation (development only)")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "npugrade-check-")
	if err != nil {
		return fmt.Errorf("sandbox check: %w", err)
	}
	defer os.RemoveAll(dir)
	k, err := cfg.PrepareKernel(ctx, dir)
	if err != nil {
		return fmt.Errorf("sandbox check: %w", err)
	}
	defer k.Close()
	const probe = `import os, socket
s = socket.socket()
s.settimeout(1)
try:
    s.connect(("127.0.0.1", 9)); net = "tcp-ok"
except OSError:
    net = "no-net"
print(os.getpid(), os.getuid(), net, os.getcwd())`
	cmd := k.Command(ctx, cfg.Python, "-c", probe)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sandbox check: bwrap trial run failed: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	f := strings.Fields(out.String())
	if len(f) != 4 {
		return fmt.Errorf("sandbox check: unexpected probe output %q (stderr %q)", out.String(), errb.String())
	}
	if f[0] != "1" && f[0] != "2" {
		return fmt.Errorf("sandbox check: probe pid %s: not in a new PID namespace", f[0])
	}
	if f[1] != fmt.Sprint(k.Limits.UID) || f[1] == "0" {
		return fmt.Errorf("sandbox check: probe ran as uid %s, want %d (never 0)", f[1], k.Limits.UID)
	}
	if !cfg.AllowNetwork && f[2] != "no-net" {
		return fmt.Errorf("sandbox check: probe reached the network")
	}
	if f[3] != SandboxHome {
		return fmt.Errorf("sandbox check: probe cwd %s, want %s", f[3], SandboxHome)
	}
	if k.Limits.Memory == "rlimit-as" {
		slog.Warn("sandbox: cgroup memory controller unusable; memory limited per process by RLIMIT_AS, no pids limit")
	}
	if k.Limits.Disk != "tmpfs" {
		slog.Warn("sandbox: work dir is not size-limited (needs root to mount a tmpfs); only the per-file size limit applies")
	}
	return nil
}
