"""npugrade kernel launcher for the fork path (see zygote.py).

Embedded in the npugrade binary (internal/sandbox) and run, as root, by the
job's driver (jupyter_client runs it as the kernel) with the host's
python3 -I -S:

    zlaunch.py SOCKET REQUEST.json PROCS WRAPPER CONNECTION_FILE    (a kernel)
    zlaunch.py SOCKET REQUEST.json PROCS WRAPPER - -c CODE          (tests: python -c)

PROCS: the job cgroup's cgroup.procs files, comma-separated.

It starts the job's sandbox exactly as the exec path does (the generated
wrapper: cgroup, rlimits, uid, bwrap with every namespace and mount), but
with a placeholder as the sandbox's program that lives until its stdin
pipe closes. It then hands the zygote a pidfd of the sandbox's pid 1 and a
descriptor of its root, and moves the kernel the zygote forked into the
job's cgroup before it may start. It exits when the
sandbox does, with the kernel's exit status, so that jupyter_client's view
of "the kernel process" is what it is on the exec path; killing its process
group (the kernel's kill) kills the sandbox's outer bwrap, whose PID
namespace takes the kernel with it.
"""

import os
import sys

import _socket

# Only C modules beyond os and sys: this runs once per warm spare, and its
# imports were most of its CPU (socket's and ctypes' Python layers cost
# 10 ms of the 19 a launch took; json and subprocess would double it). The
# request file goes to the zygote as it is; the zygote's replies are
# "pid N" and "status N".

INFO_FD = 10  # the wrapper passes it to bwrap --info-fd


def fail(msg):
    os.write(2, ("npugrade zygote launcher: %s\n" % msg).encode())
    return 125


def child_pid(fd):
    """bwrap's --info-fd JSON: {"child-pid": N, ...}."""
    buf = b""
    while b"}" not in buf:
        b = os.read(fd, 4096)
        if not b:
            break
        buf += b
    _, _, rest = buf.partition(b'"child-pid"')
    digits = rest.lstrip(b" \t\n:").split(b",")[0].split(b"}")[0].strip()
    if not digits.isdigit():
        raise RuntimeError("bwrap said %r on its info fd" % buf[:200])
    return int(digits)


def ppid(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("PPid:"):
                return int(line.split()[1])
    return -1


def prctl(*args):
    """libc's prctl through _ctypes alone (ctypes' own module is 5 ms)."""
    import _ctypes

    class c_int(_ctypes._SimpleCData):
        _type_ = "i"

    class Func(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = c_int

    class libc:
        _handle = _ctypes.dlopen(None)

    return Func(("prctl", libc))(*args)


def send_fds(s, msg, fds):
    """socket.send_fds on a bare _socket.socket: one SCM_RIGHTS message."""
    data = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
    return s.sendmsg([msg], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, data)])


def main():
    # Dies with the driver (as the exec path's bwrap does, by
    # --die-with-parent); the sandbox dies with this (its bwrap's
    # --die-with-parent), and with the sandbox the kernel.
    if prctl(1, 9, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, SIGKILL
        return fail("prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() == 1:
        return fail("the driver is gone")
    sock_path, req_path, procs, wrapper = sys.argv[1:5]
    rest = sys.argv[5:]
    with open(req_path, "rb") as f:
        req = f.read()
    run = rest[:1] == ["-"]
    header = ["run"] + rest[1:] if run else ["kernel"]
    death_r, death_w = os.pipe()
    info_r, info_w = os.pipe()
    ready_r, ready_w = os.pipe()
    os.dup2(info_w, INFO_FD)  # inheritable
    if info_w != INFO_FD:
        os.close(info_w)
    conn = "-" if run else rest[0]
    pid = os.posix_spawn("/bin/sh", ["/bin/sh", wrapper, "@", conn], os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, death_r, 0), (os.POSIX_SPAWN_DUP2, ready_w, 1)])
    for fd in (death_r, INFO_FD, ready_w):
        os.close(fd)

    def abort(msg):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        os.waitpid(pid, 0)
        return fail(msg)

    try:
        pid1 = child_pid(info_r)
        # bwrap reports its pid 1 before building the sandbox: the
        # placeholder's word says the mounts are done.
        if os.read(ready_r, 64) != b"ready\n":
            raise RuntimeError("the sandbox's placeholder did not start")
        pidfd = os.pidfd_open(pid1)
        rootfd = os.open("/proc/%d/root" % pid1, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        # The pid cannot have been reused once the pidfd is open; before,
        # it is still our sandbox's only if its parent is our bwrap.
        if ppid(pid1) != pid:
            raise RuntimeError("sandbox pid 1 (%d) is gone" % pid1)
    except Exception as e:
        return abort("start the sandbox: %s" % e)
    os.close(info_r)
    os.close(ready_r)
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
    s.settimeout(180)
    try:
        s.connect(sock_path)
        msg = req.strip() + b"\n" + "\0".join(header).encode()
        send_fds(s, msg, [pidfd, rootfd, death_w, 0, 1, 2])
        for fd in (death_w, pidfd, rootfd):
            os.close(fd)
        reply = s.recv(64).split()
        if reply[:1] != [b"pid"]:
            raise RuntimeError("zygote said %r" % reply)
        for f in procs.split(",") if procs else []:
            with open(f, "w") as cg:
                cg.write(reply[1].decode())
        s.send(b"g")
        s.settimeout(None)
        reply = s.recv(64).split()
    except Exception as e:
        return abort("zygote: %s" % e)
    os.waitpid(pid, 0)
    if reply[:1] != [b"status"]:
        return 128 + 9  # the zygote's helper was killed
    status = int(reply[1])
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
