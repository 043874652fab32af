// Package sandbox runs the Jupyter kernel of a grading job, which executes
// untrusted learner code, inside a bubblewrap sandbox with resource limits.
//
// # Threat model
//
// The learner controls every byte of code the kernel runs. The executor
// (jupyter nbconvert/nbclient, run by the runner) is trusted and runs
// outside the sandbox; only the kernel process tree is confined. The
// learner must not be able to: read the notebook file, the answers, other
// jobs' files or anything else of the host beyond the read-only system
// (/usr, the dynamic linker config, a subset of /etc); see the runner's
// environment (tokens, credentials); reach any network, including the
// host's loopback; write anywhere but its work dir, /tmp and /dev/shm (all
// size-limited); starve the host of memory or processes; signal or ptrace
// host processes; or leave processes behind after the job.
//
// # Mechanism
//
// PrepareKernel writes a per-job kernelspec (selected with
// --ExecutePreprocessor.kernel_name) whose argv is a generated wrapper
// script run as the runner. The wrapper joins the job's cgroup (v1
// memory+pids+freezer, or v2), sets rlimits with prlimit (file size, no
// core dumps, optional CPU time, and RLIMIT_AS when cgroups are unusable),
// drops to an unprivileged uid with setpriv when the runner is root, and
// execs bwrap with: new user, PID, IPC, UTS, cgroup and network namespaces
// (network only if AllowNetwork is false); no nested user namespaces; no
// capabilities; --die-with-parent; --new-session (no controlling tty, so no
// TIOCSTI); a cleared environment plus an allow-list; a read-only root; a
// fresh /proc and minimal /dev plus the configured device nodes (NPU); a
// generated passwd/group/hostname/hosts. The work dir (a size-limited tmpfs
// when the runner is root) is bound at /home/learner, the only writable
// host directory; it is HOME and the cwd.
//
// With Config.RootFS (environment mode, rootfs.go) the read-only system is
// a grading environment's root filesystem instead of the host's: its /usr,
// /bin, /lib* and /etc pieces are bound, nothing of the host's system is,
// and everything else above is unchanged.
//
// Without network namespaces in common, executor and kernel talk ZeroMQ
// over unix sockets (--KernelManager.transport=ipc). The kernel creates the
// sockets in a private per-job directory bound at the same path inside the
// sandbox. The connection file (holding the HMAC key) is read by the
// wrapper as the runner and copied into a private tmpfs inside the sandbox;
// the runtime directory itself stays root-only. The kernelspec uses
// interrupt_mode "message": a SIGINT to the wrapper's process group (the
// default "signal" mode) would kill the outer bwrap and with it the kernel.
//
// # Not covered
//
// No seccomp filter beyond bwrap's defaults; kernel exploits are out of
// scope (keep the host kernel patched). Learner code can use the CPU
// freely within the cgroup's (unlimited) CPU share; wall-clock timeouts are
// the executor's (nbclient's timeout). With ModeNone nothing is isolated.
package sandbox
