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
// # The fork path (zygote.go)
//
// With Config.Zygote, environment kernels are not exec'd but forked from a
// zygote: one Python per environment that imported torch, Dynamo,
// AOTAutograd, Inductor, ipykernel and the environment's startup imports
// once. The sandbox itself is built exactly as above (the same wrapper,
// cgroup, rlimits, uid and bwrap namespaces and mounts) around a
// placeholder; the zygote's helper enters its namespaces (setns on a
// pidfd of the sandbox's pid 1, then chroot to its root) and forks the
// kernel, which the launcher moves into the job's cgroup before it runs a
// single instruction of its own. The kernel drops every capability
// (bounding, ambient and the rest; no_new_privs), closes every inherited
// fd, starts a session and takes the sandbox's environment and cwd; it
// dies with the sandbox's PID namespace like an exec'd kernel.
//
// What changes: every forked kernel starts as a copy of the zygote's
// memory, so (1) nothing secret may ever be in the zygote: it runs no job
// code, gets no job's files, token or notebook, has a cleared
// environment and no network; (2) kernels share the zygote's address
// layout (ASLR is per zygote, not per kernel): a learner learns nothing
// about other jobs from it, but an exploit for a memory bug in the
// interpreter gets the same addresses in every kernel; (3) pages shared
// with the zygote are charged to the zygote's cgroup, not the job's, so a
// job's memory limit counts what its kernel changed (more room than on
// the exec path, never less); (4) the zygote runs the environment's
// Python outside any job sandbox, as the kernel uid with no capability,
// in its own mount, IPC, UTS and network namespaces but the host's user
// and PID namespaces (which it needs to enter the jobs' sandboxes; as the
// owner of their user namespaces it can enter any of them). An
// environment whose Python is malicious could therefore interfere with
// other jobs' kernels: environments are trusted (built or imported by an
// administrator), learners are not. Its socket is in a root-only
// directory; it serves only root. The zygote and its helpers are outside
// every job's PID namespace: a learner cannot signal or ptrace them.
//
// A runner killed mid-job (SIGKILL, a crash) never runs Close: the next
// runner's Sweep removes each sandbox whose recorded owner process (pid and
// start time) is gone, with its cgroups, its work tmpfs and the job
// directory it recorded (root's files in a root-only directory the kernel
// cannot write; a recorded path is removed only if it holds the sandbox's
// own private area). Close drops that record before the executor removes
// the job directory, and ModeNone writes none: for a runner killed in
// between, and for every job without a sandbox, the executor names each
// job directory for the process that made it, and execution.SweepJobDirs,
// run after Sweep at runner start, removes a directory only if its name
// carries a dead process of this boot and PID namespace and it is a real
// directory (never followed through a link) of the runner's uid, mode 0700.
// A learner cannot steer either sweep: the kernel sees neither the
// records in the base dir nor the work root (its /tmp is its own tmpfs),
// and nothing it writes in its work areas is read by a sweep. In ModeNone
// learner code runs as the runner and could delete those directories
// anyway. Job directories of another uid, boot or PID namespace (a work
// root shared with another host or container) and unmarked ones (from
// versions before the names carried their owner) are never swept.
//
// # Not covered
//
// No seccomp filter beyond bwrap's defaults; kernel exploits are out of
// scope (keep the host kernel patched). Learner code can use the CPU
// freely within the cgroup's (unlimited) CPU share; wall-clock timeouts are
// the executor's (nbclient's timeout). With ModeNone nothing is isolated.
package sandbox
