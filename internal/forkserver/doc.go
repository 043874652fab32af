// Package forkserver runs fork servers ("zygotes"): long-lived processes
// that paid a slow start once (Python importing torch or nbclient) and then
// fork ready children on request. Two use it: the kernel zygote
// (internal/sandbox, zygote.go), which forks Jupyter kernels into job
// sandboxes, and the driver zygote (internal/execution, driverzygote.go),
// which forks nbclient drivers. It exists so that their lifecycle is
// written once: starting the process, its readiness, restarting it after
// it died or its configuration changed, stopping and reaping it, and the
// request exchange over its socket. It is its own package because
// internal/execution may not import internal/sandbox.
//
// The protocol a server speaks: fd 3 is a listening SOCK_SEQPACKET socket
// (Proc.Socket); with Spec.Lifeline, fd 4 is the read end of a pipe that
// reaches end-of-file when the runner stops it or dies; further fds are the
// caller's (Spec.Command's ExtraFiles). Once it can fork, it writes one line
// to stdout, "ready" or "ready PAYLOAD" (Spec.Ready checks it). Each
// connection is one request: a message with file descriptors (SCM_RIGHTS)
// and replies on the same connection (Proc.Request). What a request means,
// and what the server does with its privileges, is the caller's.
//
// Threat model: the fork path's is in internal/sandbox's package comment
// (doc.go, "The fork path"): what forking changes, and why nothing secret
// may ever be in a zygote. What this package holds up of it: the socket
// lies in a fresh directory only root may enter (0700; the servers also
// check the peer's uid), the server runs in its own process group with
// the environment its caller gives (nothing inherited), it is killed when
// the runner dies (SIGKILL as the parent-death signal, and the lifeline
// for a server that changed its uid, which clears that signal), and
// stopping it kills its whole process group and removes its directory.
package forkserver
