"""npugrade kernel zygote: a fork server for sandboxed Jupyter kernels.

Embedded in the npugrade binary (internal/sandbox, zygote.go) and run by the
runner in a grading environment's root filesystem, as

    python3 zygote.py CONFIG_JSON        (fd 3: a listening SOCK_SEQPACKET socket,
                                          fd 4: a pipe whose end means "exit")

CONFIG_JSON: {"uid": U, "gid": G, "preload": [modules], "kernel_argv": [args]}
(kernel_argv: the command line every forked kernel gets, parsed once here).
It starts as root with only CAP_SETUID/CAP_SETGID, drops to the kernel uid
at once (no capability left), imports the preload modules and what
ipykernel needs, and then only forks. It never runs learner code and never
sees a job's files, tokens or answers: what it holds is what every kernel
would import anyway.

For each connection (from zlaunch.py, run as root by the job's driver; the
socket's directory is root-only) it forks an intermediate process that
receives the request and, by SCM_RIGHTS, a pidfd of the job sandbox's
bubblewrap pid 1, a directory fd of that sandbox's root, the write end of
the pipe that keeps the sandbox's placeholder alive, and stdin/out/err. The
intermediate sets the rlimits, enters every namespace of the sandbox
(setns on the pidfd: user, mount, pid, net, ipc, uts, cgroup), chroots to
its root and forks the kernel, which is thereby inside the sandbox's PID
namespace. It replies the kernel's pid; the launcher moves the kernel into
the job's cgroup and says "g", and only then the kernel starts a session, drops every capability (bounding,
ambient, permitted, effective, inheritable), sets no_new_privs, closes every
inherited fd, takes the sandbox's environment and cwd and runs ipykernel
(or, for tests, a `python -c` program). The intermediate waits for it,
reports its exit status and exits, which closes the placeholder's pipe: the
sandbox's pid 1 then exits and the kernel's leftovers die with the PID
namespace, exactly as when the kernel is bwrap's own child.
"""

import ctypes
import gc
import importlib
import importlib.util
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import traceback

# The script's directory is not the kernel's business (ipykernel_launcher
# drops sys.path[0] the same way).
del sys.path[0]

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
ALL_NS = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

libc = ctypes.CDLL(None, use_errno=True)

# The kernels' command line as parse_kernel_argv parsed it (None: not).
PARSED = None


def prctl(op, arg=0):
    if libc.prctl(ctypes.c_int(op), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "prctl(%d, %d): %s" % (op, arg, os.strerror(e)))


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities():
    """Empties every capability set of this process, for good."""
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    hdr = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (CapData * 2)()
    if libc.capset(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    caps = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Cap"):
                k, v = line.split(":")
                caps[k] = int(v, 16)
    if any(caps.values()) or len(caps) < 5:
        raise RuntimeError("capabilities left after the drop: %r" % caps)


def preload(modules):
    failed = []
    for m in modules:
        try:
            if importlib.util.find_spec(m.split(".")[0]) is not None:
                importlib.import_module(m)
        except BaseException as e:  # a broken optional module must not stop the zygote
            failed.append("%s: %s: %s" % (m, type(e).__name__, e))
    return failed


def startup_imports():
    """The modules every kernel imports at start: ipykernel, its debugger,
    what its start imports lazily, and the plain imports among the
    environment's IPython exec_lines (the grading environment makes
    kernels import its backend stand-in)."""
    import ast

    # tornado.platform.asyncio, completerlib and faulthandler: what
    # ipykernel's start imports lazily (each kernel paid for it).
    failed = preload(["ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.debugger", "IPython",
                      "tornado.platform.asyncio", "IPython.core.completerlib", "faulthandler"])
    try:
        from traitlets.config.loader import PyFileConfigLoader

        cfg = PyFileConfigLoader("ipython_kernel_config.py", "/etc/ipython").load_config()
        lines = list(cfg.InteractiveShellApp.get("exec_lines", []))
    except Exception:
        lines = []
    for line in lines:
        try:
            tree = ast.parse(line)
        except SyntaxError:
            continue
        names = []
        for node in tree.body:
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.append(node.module)
        failed += preload(names)
    return failed


def prepare_tracebacks():
    """Does once what a kernel's first traceback did in every job whose
    cell raised: IPython's traceback (stack_data, executing) parses
    interactiveshell.py, whose run_code frame is under every cell, and
    sets up pygments' lexer and styles; 0.15 to 0.2 s of CPU, which on a
    loaded 2-core host ran past a 2 s cell limit. Forked kernels find the
    parsed source in stack_data's cache (the same file at the same path
    in the sandbox) and format their first traceback in about 15 ms."""
    try:
        import stack_data
        from IPython.core import interactiveshell, ultratb

        stack_data.Source.for_filename(interactiveshell.__file__)
        try:
            raise ValueError("zygote: a traceback to format")
        except ValueError:
            exc = sys.exc_info()
        for scheme in ("Neutral", "Linux", "LightBG", "NoColor"):
            ultratb.AutoFormattedTB(mode="Context", color_scheme=scheme).structured_traceback(*exc)
    except Exception as e:  # an IPython without these: kernels do it themselves
        return ["tracebacks: %s: %s" % (type(e).__name__, e)]
    return []


def parse_kernel_argv(argv):
    """Parses the kernels' command line (the same for every kernel: -f and
    the sandbox's connection file) once, as IPKernelApp.parse_command_line
    would: traitlets builds an argument parser over every configurable
    class for it, 5 ms of each kernel's start. Returns (argv, the command
    line's config, extra args), or None (kernels then parse their own)."""
    if not argv:
        return None
    try:
        from copy import deepcopy

        from ipykernel.kernelapp import IPKernelApp

        app = IPKernelApp()  # not the singleton: kernels make their own
        app.parse_command_line(list(argv))
        if app.subapp is not None:
            return None
        return list(argv), deepcopy(app.cli_config), list(app.extra_args)
    except Exception as e:
        print("zygote: parse the kernels' command line: %s: %s" % (type(e).__name__, e), file=sys.stderr, flush=True)
        return None


def launch_kernel(argv, parsed):
    """ipykernel's launch_new_instance, with the command line parsed in
    the zygote when it is the one parsed there."""
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    if parsed is not None and parsed[0] == argv:
        from copy import deepcopy

        def parse_command_line(argv=None):
            # What Application.parse_command_line ends with.
            app.argv = list(argv)
            app.cli_config = deepcopy(parsed[1])
            app.update_config(app.cli_config)
            app.extra_args = list(parsed[2])

        app.parse_command_line = parse_command_line
    app.initialize(argv)
    app.start()


def collapse_heap():
    """Moves the zygote's heap onto transparent huge pages (MADV_COLLAPSE,
    Linux 6.1+, whatever the host's THP mode; elsewhere nothing changes):
    each fork then copies one page table entry per 2 MiB instead of 512,
    and every kernel costs two forks of the zygote's ~260 MiB of its own
    memory. A forked kernel's first write to such a page splits the
    mapping and copies 4 KiB, as before; its new memory comes in the
    host's usual pages (the areas are not marked MADV_HUGEPAGE)."""
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    huge = 2 << 20
    with open("/proc/self/maps") as f:
        maps = f.read().splitlines()
    for line in maps:
        f = line.split()
        if f[1] != "rw-p" or (len(f) > 5 and f[5] != "[heap]"):
            continue  # anonymous private memory and the brk heap only
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        a, b = (lo + huge - 1) // huge * huge, hi // huge * huge
        if b - a >= huge:
            madvise(a, b - a, 25)  # MADV_COLLAPSE; failures are harmless


def recv_request(conn):
    pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid != 0:
        raise PermissionError("request from uid %d" % uid)
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 8)
    if len(fds) != 6:
        raise ValueError("want 6 descriptors, got %d" % len(fds))
    # The request file (one line of JSON), then mode and argv, NUL-separated.
    body, _, header = msg.partition(b"\n")
    req = json.loads(body)
    words = header.decode().split("\0")
    req["mode"] = words[0]
    if req["mode"] == "run":
        req["argv"] = words[1:]
    return req, fds


def intermediate(lsock, conn):
    lsock.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    req, fds = recv_request(conn)
    pidfd, rootfd, death = fds[:3]
    stdio = fds[3:]
    for name, val in (req.get("rlimits") or {}).items():
        resource.setrlimit(getattr(resource, "RLIMIT_" + name), (val, val))
    os.setns(pidfd, ALL_NS)
    os.fchdir(rootfd)
    os.chroot(".")
    os.close(pidfd)
    os.close(rootfd)
    go_r, go_w = os.pipe()
    kid = os.fork()
    if kid == 0:
        code = 1
        try:
            os.close(go_w)
            # Nothing runs before the launcher has moved this process
            # into the job's cgroup.
            if os.read(go_r, 1) == b"g":
                code = kernel(req, stdio)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except Exception:
                pass
            os._exit(code)
    os.close(go_r)
    for fd in stdio:
        os.close(fd)
    # This process stays out of the job's cgroup: when the cgroup is
    # killed it is alive to reap the kernel, so that the sandbox's pid 1
    # is not left waiting for a zombie whose parent died with it.
    conn.sendall(b"pid %d" % kid)
    if conn.recv(16) == b"g":
        os.write(go_w, b"g")
    os.close(go_w)
    _, status = os.waitpid(kid, 0)
    try:
        conn.sendall(b"status %d" % status)
    except OSError:
        pass
    return 0  # exiting closes death: the sandbox's placeholder ends


def kernel(req, stdio):
    """Runs in the sandbox's namespaces; becomes the job's kernel."""
    os.setsid()
    uid, gid = req["uid"], req["gid"]
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getgroups():
        raise RuntimeError("supplementary groups left: %r" % os.getgroups())
    drop_capabilities()
    prctl(PR_SET_DUMPABLE, 1)  # as after a plain exec of the kernel
    for i, fd in enumerate(stdio):
        os.dup2(fd, i)
    os.closerange(3, 1 << 16)
    os.umask(0o077)
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    # python -m puts the cwd first on sys.path: the learner's own modules.
    sys.path.insert(0, os.getcwd())
    if "numpy" in sys.modules:
        # The zygote's seed would be every kernel's (random reseeds itself at fork).
        sys.modules["numpy"].random.seed()
    sys.argv = list(req["argv"])
    if req["mode"] == "run":  # python -c CODE (the sandbox's tests)
        code = sys.argv[1]
        sys.argv = ["-c"] + sys.argv[2:]
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return 0
    sys.argv = [sys.executable] + sys.argv
    launch_kernel(sys.argv[1:], PARSED)
    return 0


def serve(lsock, lifeline):
    # Intermediates are reaped by the kernel (their status goes to the launcher).
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while True:
        ready, _, _ = select.select([lsock, lifeline], [], [])
        if lifeline in ready:
            # The runner is gone (a parent-death signal would not do: the
            # dying root parent may not signal this uid without CAP_KILL).
            os._exit(0)
        conn, _ = lsock.accept()
        try:
            pid = os.fork()
        except OSError:
            traceback.print_exc()
            conn.close()
            continue
        if pid == 0:
            code = 125
            try:
                os.close(lifeline)
                code = intermediate(lsock, conn)
            except BaseException:
                traceback.print_exc()
            os._exit(code)
        conn.close()


def main():
    cfg = json.loads(sys.argv[1])
    os.setgroups([])
    os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
    os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
    lsock = socket.socket(fileno=3)
    failed = preload(cfg.get("preload") or []) + startup_imports() + prepare_tracebacks()
    try:
        import torch._dynamo

        torch._dynamo.list_backends()  # entry-point discovery, no compile
    except Exception:
        pass
    for f in failed:
        print("zygote: preload: " + f, file=sys.stderr, flush=True)
    global PARSED
    PARSED = parse_kernel_argv(cfg.get("kernel_argv"))
    gc.collect()
    gc.freeze()  # forks then share these pages instead of copying them at the next collection
    collapse_heap()
    # Threads (an OpenMP pool, a ZeroMQ I/O thread) and ZeroMQ contexts do
    # not survive a fork: none may exist here.
    threads = len(os.listdir("/proc/self/task"))
    zmq = sys.modules.get("zmq")
    if threads != 1 or (zmq is not None and getattr(zmq.Context, "_instance", None) is not None):
        print("zygote: %d threads or a ZeroMQ context before forking" % threads, file=sys.stderr, flush=True)
        sys.exit(1)
    # The preload modules every forked kernel has (the driver need not
    # import them again): those that are now in sys.modules.
    loaded = [m for m in cfg.get("preload") or [] if m in sys.modules]
    os.write(1, ("ready " + json.dumps(loaded) + "\n").encode())
    serve(lsock, 4)


if __name__ == "__main__":
    main()
