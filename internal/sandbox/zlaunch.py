"""npugrade kernel launcher for the fork path (see zygote.py).

Embedded in the npugrade binary (internal/sandbox) and run, as root, by the
job's driver (jupyter_client runs it as the kernel) with the host's
python3 -I -S:

    zlaunch.py SOCKET REQUEST.json WRAPPER CONNECTION_FILE    (a kernel)
    zlaunch.py SOCKET REQUEST.json WRAPPER - -c CODE          (tests: python -c)

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

import json
import os
import socket
import subprocess
import sys

INFO_FD = 10  # the wrapper passes it to bwrap --info-fd


def fail(msg):
    sys.stderr.write("npugrade zygote launcher: %s\n" % msg)
    sys.stderr.flush()
    return 125


def read_info(fd):
    buf = b""
    while True:
        b = os.read(fd, 4096)
        if not b:
            break
        buf += b
        try:
            return json.loads(buf)
        except ValueError:
            continue
    raise RuntimeError("bwrap said nothing on its info fd")


def ppid(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("PPid:"):
                return int(line.split()[1])
    return -1


def main():
    import ctypes

    # Dies with the driver (as the exec path's wrapper does, through
    # bwrap --die-with-parent); the sandbox's bwrap dies with this.
    ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    sock_path, req_path, wrapper = sys.argv[1:4]
    rest = sys.argv[4:]
    with open(req_path) as f:
        req = json.load(f)
    if rest[:1] == ["-"]:
        req["mode"], req["argv"] = "run", rest[1:]
    else:
        req["mode"] = "kernel"
    death_r, death_w = os.pipe()
    info_r, info_w = os.pipe()
    if info_w != INFO_FD:
        os.dup2(info_w, INFO_FD)
        os.close(info_w)
    conn = rest[0] if req["mode"] == "kernel" else "-"
    ready_r, ready_w = os.pipe()
    p = subprocess.Popen(["/bin/sh", wrapper, "@", conn], stdin=death_r, stdout=ready_w, pass_fds=(INFO_FD,))
    os.close(death_r)
    os.close(INFO_FD)
    os.close(ready_w)
    try:
        pid1 = int(read_info(info_r)["child-pid"])
        # bwrap reports its pid 1 before building the sandbox: the
        # placeholder's word says the mounts are done.
        if os.read(ready_r, 64) != b"ready\n":
            raise RuntimeError("the sandbox's placeholder did not start")
        os.close(ready_r)
        pidfd = os.pidfd_open(pid1)
        rootfd = os.open("/proc/%d/root" % pid1, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        # The pid cannot have been reused once the pidfd is open; before,
        # it is still our sandbox's only if its parent is our bwrap.
        if ppid(pid1) != p.pid:
            raise RuntimeError("sandbox pid 1 (%d) is gone" % pid1)
    except Exception as e:
        p.kill()
        p.wait()
        return fail("start the sandbox: %s" % e)
    os.close(info_r)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(float(req.get("timeout") or 120))
    try:
        s.connect(sock_path)
        socket.send_fds(s, [json.dumps(req).encode()], [pidfd, rootfd, death_w, 0, 1, 2])
        os.close(death_w)
        os.close(pidfd)
        os.close(rootfd)
        kernel = int(json.loads(s.recv(4096))["pid"])
        for f in req.get("procs") or []:
            with open(f, "w") as cg:
                cg.write(str(kernel))
        s.send(b"g")
        s.settimeout(None)
        reply = s.recv(4096)
    except Exception as e:
        p.kill()
        p.wait()
        return fail("zygote: %s" % e)
    p.wait()
    if not reply:
        return 128 + 9  # the intermediate was killed (the job's cgroup)
    status = json.loads(reply)["status"]
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
