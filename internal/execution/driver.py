"""npugrade execution driver: runs one notebook cell by cell with nbconvert's
ExecutePreprocessor (nbclient) and writes the partial notebook after every
cell, so that a kernel that dies or a run that is killed still leaves the
outputs of the cells before it.

It is embedded in the npugrade binary (internal/execution) and run by the
runner, OUTSIDE the sandbox: only the kernel it starts is confined. Usage:

    python3 -I driver.py CONFIG.json          (cold: one process per job)
    python3 -I driver.py --warm CONFIG.json   (warm: started before the job)
    python3 -I driver.py --zygote             (forks warm drivers, see zygote())

A warm driver starts the kernel (and imports CONFIG's "preload" modules in
it, into sys.modules only), writes {"ready": true} to fd 4, then reads one
job request line from fd 3: a JSON object whose keys override CONFIG's
(notebook, cell_timeout, limits...). It checks that the kernel is alive and
answers kernel_info, replies {"accepted": true} (or {"accepted": false,
"error": ...} and exits 3: the runner discards it and uses another), runs
the notebook exactly as the cold driver does, and exits. One kernel, one
job: nothing carries over.

CONFIG (written by the Go executor):
    notebook        input .ipynb path
    output          executed .ipynb path (rewritten atomically after each cell)
    progress        small JSON file: {"cell": i} before each cell runs
    cwd             kernel working directory (ignored by the sandboxed kernel)
    config          traitlets config {"Class": {"trait": value}} (kernel name,
                    IPC transport, ...), as nbconvert's --Class.trait=value
    cell_timeout    default per-cell timeout (s); metadata.grader.timeout wins
    interrupt_grace seconds a cell may keep running after its timeout
                    interrupt before the kernel is killed
    max_cell_output, max_notebook_output   output bytes (0 = unlimited)
    max_cell_outputs                       output items per cell (0 = unlimited)
    preload         (warm only) modules to import before the job; missing
                    ones are skipped

What it notes for the grader goes into each cell's metadata.npugrade:
    timed_out, timeout     the cell hit its timeout and was interrupted
    interrupt_ignored      ... and was still running interrupt_grace later,
                           so the kernel was killed
    kernel_died            the kernel died while this cell ran
    truncated              "cell" or "notebook": outputs were cut at a limit
Exit status: 0 when the notebook was processed (whatever the learner's code
did), 2 when the executor itself could not run (no kernel, bad config).
"""

import asyncio
import json
import os
import sys
import time
import traceback

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbconvert.preprocessors import ExecutePreprocessor
from traitlets.config import Config

META = "npugrade"
MARKER = "\n[npugrade: output truncated: {what}]\n"


def _fast_dates():
    """jupyter_client parses every message's header and parent header for
    ISO 8601 dates with dateutil's general parser: over a third of the
    driver's CPU per job (5 to 6 messages a cell). datetime.fromisoformat
    reads the same strings (those its pattern admits) to the same
    datetimes; whatever it cannot read still goes to dateutil."""
    import datetime

    from jupyter_client import jsonutil, session

    pat, slow, ensure_tz = jsonutil.ISO8601_PAT, jsonutil.parse_date, jsonutil._ensure_tzinfo
    fromiso = datetime.datetime.fromisoformat

    def parse_date(s):
        if s is None or not pat.match(s):
            return s
        try:
            return ensure_tz(fromiso(s))
        except ValueError:
            return slow(s)

    def extract_dates(obj):
        if isinstance(obj, dict):
            return {k: extract_dates(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [extract_dates(o) for o in obj]
        if isinstance(obj, str):
            return parse_date(obj)
        return obj

    if getattr(session, "extract_dates", None) is jsonutil.extract_dates:
        session.extract_dates = extract_dates


_fast_dates()


def note(cell, **kv):
    m = cell.setdefault("metadata", {}).setdefault(META, {})
    m.update(kv)


def out_size(out):
    """Approximate serialized size of an output (what it adds to the notebook)."""
    n = 64
    t = out.get("output_type")
    if t == "stream":
        n += len(out.get("text", ""))
    elif t == "error":
        n += len(out.get("ename", "")) + len(out.get("evalue", ""))
        n += sum(len(x) for x in out.get("traceback", []))
    else:
        for v in out.get("data", {}).values():
            n += len(v) if isinstance(v, str) else len(json.dumps(v))
        n += len(json.dumps(out.get("metadata", {})))
    return n


class Client(ExecutePreprocessor):
    """ExecutePreprocessor with output limits and a kill for cells that
    ignore the timeout interrupt."""

    def __init__(self, nb, limits, **kw):
        super().__init__(**kw)
        # As ExecutePreprocessor.preprocess does: the constructor cannot
        # take nb (nbconvert 6.5 passes it twice).
        NotebookClient.__init__(self, nb, None)
        self.limits = limits
        self.cell_bytes = {}
        self.cell_count = {}
        self.total_bytes = 0
        self.cut = {}  # cell index -> "cell" | "notebook"
        self.current = None  # (index, cell) running now
        self.interrupted = None  # monotonic time of the timeout interrupt
        self.killer = None

    def output(self, outs, msg, display_id, cell_index):
        out = super().output(outs, msg, display_id, cell_index)
        if out is None or not outs or outs[-1] is not out:
            return out
        lim = self.limits
        cell = self.nb.cells[cell_index]
        if cell_index in self.cut:
            outs.pop()
            return None
        size = out_size(out)
        used = self.cell_bytes.get(cell_index, 0)
        count = self.cell_count.get(cell_index, 0) + 1
        over_cell = lim["max_cell_output"] and used + size > lim["max_cell_output"]
        over_nb = lim["max_notebook_output"] and self.total_bytes + size > lim["max_notebook_output"]
        over_count = lim["max_cell_outputs"] and count > lim["max_cell_outputs"]
        if not (over_cell or over_nb or over_count):
            self.cell_bytes[cell_index] = used + size
            self.cell_count[cell_index] = count
            self.total_bytes += size
            return out
        if over_count:
            scope, what = "cell", "more than %d outputs in one cell" % lim["max_cell_outputs"]
        elif over_cell:
            scope, what = "cell", "the cell's output exceeded the %s per-cell limit" % fmt(lim["max_cell_output"])
        else:
            scope, what = "notebook", "the notebook's output exceeded the %s limit for the whole notebook" % fmt(lim["max_notebook_output"])
        # Keep what fits of a text stream; drop anything else whole.
        room = (lim["max_cell_output"] - used) if over_cell else None
        if over_nb:
            r2 = lim["max_notebook_output"] - self.total_bytes
            room = r2 if room is None else min(room, r2)
        outs.pop()
        if out.get("output_type") == "stream" and room and room > 64 and not over_count:
            keep = out["text"][: room - 64]
            if keep:
                out["text"] = keep
                outs.append(out)
        outs.append(nbformat.v4.new_output("stream", name="stderr", text=MARKER.format(what=what)))
        self.cut[cell_index] = scope
        note(cell, truncated=scope)
        return None

    def clear_output(self, outs, msg, cell_index):
        # A cleared cell's budget is free again, except once truncated.
        super().clear_output(outs, msg, cell_index)
        if not outs and cell_index not in self.cut:
            self.total_bytes -= self.cell_bytes.pop(cell_index, 0)
            self.cell_count.pop(cell_index, None)

    async def _async_handle_timeout(self, timeout, cell=None):
        if self.interrupted is None:
            self.interrupted = time.monotonic()
            if cell is not None:
                note(cell, timed_out=True, timeout=timeout)
            self.killer = asyncio.ensure_future(self._kill_if_ignored())
        return await super()._async_handle_timeout(timeout, cell)

    async def _kill_if_ignored(self):
        # The interrupt is sent again each second of the grace, as a user
        # presses it again: one can be lost (it reached the kernel before
        # the cell's code ran, on a loaded host). execute() cancels this
        # as soon as the cell ends, before the next one starts.
        deadline = time.monotonic() + self.limits["interrupt_grace"]
        while self.current is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(1.0, left))
            if self.current is not None and deadline - time.monotonic() > 0.05:
                try:
                    await ensure(self.km.interrupt_kernel())
                except Exception:
                    traceback.print_exc()
        if self.current is not None:
            _, cell = self.current
            note(cell, interrupt_ignored=True)
            # SIGKILL to the kernel's process group: in the sandbox that is
            # the outer bwrap, and --die-with-parent takes the rest.
            try:
                await ensure(self.km.provisioner.kill())
            except Exception:
                traceback.print_exc()


def fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if n == int(n) else ("%.1f %s" % (n, unit))
        n /= 1024.0


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(tmp, path)


def save(nb, path):
    # Plain JSON: nbformat.writes deep-copies, validates and re-splits the
    # whole notebook, milliseconds that add up to most of the driver's CPU
    # when it saves after each of a notebook's dozens of cells. The runner
    # parses and checks the result; nbformat's layout is not needed.
    try:
        data = json.dumps(nb, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        data = nbformat.writes(nb, version=4)
    write_atomic(path, data)


def make_client(cfg, nb):
    """The nbclient executor for one notebook (nb may be a placeholder that
    set_job replaces: a warm driver builds its client before the job)."""
    c = Config()
    for cls, traits in (cfg.get("config") or {}).items():
        for k, v in traits.items():
            c[cls][k] = v
    client = Client(
        nb,
        {},
        resources={"metadata": {"path": cfg["cwd"]}},
        config=c,
        allow_errors=True,
        interrupt_on_timeout=True,
        store_widget_state=False,
        raise_on_iopub_timeout=False,
        record_timing=True,
        startup_timeout=int(cfg.get("startup_timeout") or 60),
        # Every output is in the notebook by then, and the sandbox is
        # destroyed after the job: no need to wait for a graceful exit.
        shutdown_kernel="immediate",
    )
    return client


def set_job(client, cfg, nb):
    """Points the client at the job's notebook, timeouts and limits."""
    default = int(cfg["cell_timeout"])

    def timeout_func(cell):
        g = cell.get("metadata", {}).get("grader", {}) or {}
        t = g.get("timeout")
        try:
            return int(t) if t else default
        except Exception:
            return default

    limits = {k: cfg.get(k) or 0 for k in ("max_cell_output", "max_notebook_output", "max_cell_outputs")}
    limits["interrupt_grace"] = float(cfg.get("interrupt_grace") or 5)
    client.nb = nb
    client.limits = limits
    client.timeout = default
    client.timeout_func = timeout_func
    client.reset_execution_trackers()


async def kernel_info(client, timeout):
    """The kernel's language_info, or an exception when it does not answer
    within timeout seconds (the health check of a warm kernel)."""
    if hasattr(client.km, "is_alive") and not await ensure(client.km.is_alive()):
        raise RuntimeError("the kernel is not alive")
    msg_id = await ensure(client.kc.kernel_info())
    saved = client.timeout
    client.timeout = timeout
    try:
        info = await client.async_wait_for_reply(msg_id)
    finally:
        client.timeout = saved
    if info is None or "language_info" not in info["content"]:
        raise RuntimeError("the kernel did not answer kernel_info")
    return info["content"]["language_info"]


async def execute(client, cfg, nb, language_info):
    """Runs every code cell of nb in the client's kernel, saving the partial
    notebook and the progress after each cell."""
    nb.metadata["language_info"] = language_info
    save(nb, cfg["output"])
    try:
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            write_atomic(cfg["progress"], json.dumps({"cell": index}))
            client.current = (index, cell)
            client.interrupted = None
            try:
                await client.async_execute_cell(cell, index, store_history=True)
            except DeadKernelError:
                note(cell, kernel_died=True)
                save(nb, cfg["output"])
                write_atomic(cfg["progress"], json.dumps({"cell": index, "kernel_died": True}))
                return 0
            finally:
                client.current = None
                if client.killer is not None:
                    client.killer.cancel()
                    client.killer = None
            save(nb, cfg["output"])
        write_atomic(cfg["progress"], json.dumps({"done": True}))
    except DeadKernelError:
        # Died between cells (a thread calling os._exit after its cell ended).
        write_atomic(cfg["progress"], json.dumps({"kernel_died": True}))
    return 0


async def run(cfg):
    """Cold mode: start a kernel for this notebook, run it, stop."""
    nb = nbformat.read(cfg["notebook"], as_version=4)
    client = make_client(cfg, nb)
    set_job(client, cfg, nb)
    try:
        async with client.async_setup_kernel():
            info = await kernel_info(client, int(cfg.get("startup_timeout") or 60))
            return await execute(client, cfg, nb, info)
    except DeadKernelError:
        write_atomic(cfg["progress"], json.dumps({"kernel_died": True}))
        return 0


# The preload runs in a throw-away namespace: the modules land in
# sys.modules only, and the learner's namespace stays as a fresh kernel's.
PRELOAD = """exec(%r, {})"""
PRELOAD_BODY = """import importlib, importlib.util
failed = []
for m in %r:
    try:
        if importlib.util.find_spec(m.split('.')[0]) is not None:
            importlib.import_module(m)
    except BaseException as e:
        failed.append('%%s: %%s: %%s' %% (m, type(e).__name__, e))
if failed:
    raise ImportError('; '.join(failed))
"""


async def preload(client, modules, timeout):
    code = PRELOAD % (PRELOAD_BODY % (list(modules),))
    msg_id = await ensure(client.kc.execute(code, silent=True, store_history=False))
    saved = client.timeout
    client.timeout = timeout
    try:
        reply = await client.async_wait_for_reply(msg_id)
    finally:
        client.timeout = saved
    if reply is None:
        raise RuntimeError("the kernel did not answer the preload")
    content = reply["content"]
    if content.get("status") != "ok":
        raise RuntimeError("preload failed: %s: %s" % (content.get("ename"), content.get("evalue")))


class Channel:
    """The warm driver's private pipes to the runner (fds the runner passes
    in; never inherited by the kernel, which cannot write to them)."""

    def __init__(self, rfd, wfd):
        os.set_inheritable(rfd, False)
        os.set_inheritable(wfd, False)
        self.r = os.fdopen(rfd, "rb", buffering=0)
        self.w = os.fdopen(wfd, "wb", buffering=0)

    def send(self, **kv):
        self.w.write((json.dumps(kv) + "\n").encode())

    def recv(self):
        buf = b""
        while not buf.endswith(b"\n"):
            b = self.r.read(65536)
            if not b:
                return None
            buf += b
            if len(buf) > 1 << 20:
                raise RuntimeError("job request too long")
        return json.loads(buf)


async def warm(cfg, chan):
    """Warm mode: start the kernel (and preload modules) before the job
    exists, say ready, wait for one job, check the kernel, run the job."""
    client = make_client(cfg, nbformat.v4.new_notebook())
    startup = int(cfg.get("startup_timeout") or 60)
    try:
        async with client.async_setup_kernel():
            # The setup has waited for the kernel's kernel_info reply; a
            # preload is checked with another one after it.
            if cfg.get("preload"):
                try:
                    await preload(client, cfg["preload"], startup)
                    # The preload must leave a live, answering kernel.
                    await kernel_info(client, startup)
                except Exception as e:
                    raise RuntimeError("preload failed: %s: %s" % (type(e).__name__, e))
            chan.send(ready=True)
            job = chan.recv()
            if job is None:
                return 0  # the runner discarded this environment
            cfg.update(job)
            nb = nbformat.read(cfg["notebook"], as_version=4)
            set_job(client, cfg, nb)
            try:
                info = await kernel_info(client, 10)
            except Exception as e:
                chan.send(accepted=False, error="health check: %s" % (e,))
                return 3
            chan.send(accepted=True)
            return await execute(client, cfg, nb, info)
    except DeadKernelError:
        write_atomic(cfg["progress"], json.dumps({"kernel_died": True}))
        return 0


async def ensure(x):
    if asyncio.iscoroutine(x) or isinstance(x, asyncio.Future):
        return await x
    return x


def zygote(lfd):
    """Fork-server mode (driver.py --zygote, fd lfd: a listening
    SOCK_SEQPACKET socket in a root-only directory): nbformat, nbclient,
    nbconvert and jupyter_client are imported once; each warm driver is
    forked from here instead of starting Python and importing them again.
    A request is a JSON object {"argv", "cwd", "env"} with the driver's fds
    3, 4 and its log (stdout and stderr) attached (SCM_RIGHTS). The reply
    is {"pid": N} and, when that driver exits, {"status": S}.

    It holds no job data: each child gets its job's config, pipes and
    environment only after the fork. No event loop, ZeroMQ context or
    thread exists here before a fork."""
    import selectors
    import socket
    import struct

    import importlib

    # What a warm driver imports on its way to "ready": jupyter_client's
    # kernel start looks for the native kernel's spec, which imports
    # ipykernel and IPython (0.15 s of each fork's CPU otherwise).
    for m in ("jupyter_client.manager", "jupyter_client.asynchronous", "jupyter_client.provisioning.local_provisioner",
              "jupyter_client.kernelspec", "ipykernel.kernelspec", "zmq.asyncio"):
        try:
            importlib.import_module(m)
        except Exception:
            pass
    try:
        from jupyter_client.provisioning import KernelProvisionerFactory

        KernelProvisionerFactory.instance()  # scans the entry points once
    except Exception:
        pass
    nbformat.validate(nbformat.v4.new_notebook())  # compiles the schema once
    import gc

    gc.collect()
    gc.freeze()
    lsock = socket.socket(fileno=lfd)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ)
    children = {}  # pidfd -> (pid, conn)
    os.write(1, b"ready\n")
    while True:
        for key, _ in sel.select():
            if key.fileobj is lsock:
                conn, _ = lsock.accept()
                uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
                try:
                    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 4)
                    req = json.loads(msg)
                    if uid != os.geteuid() or len(fds) != 3:
                        raise ValueError("bad request")
                    pid = os.fork()
                except Exception:
                    traceback.print_exc()
                    conn.close()
                    continue
                if pid == 0:
                    code = 2
                    try:
                        code = forked_driver(req, fds, lsock, conn, sel, children)
                    except SystemExit as e:
                        code = e.code if isinstance(e.code, int) else 2
                    except BaseException:
                        traceback.print_exc()
                    finally:
                        os._exit(code)
                for fd in fds:
                    os.close(fd)
                pidfd = os.pidfd_open(pid)
                children[pidfd] = (pid, conn)
                sel.register(pidfd, selectors.EVENT_READ)
                conn.sendall(json.dumps({"pid": pid}).encode())
            else:
                pidfd = key.fileobj
                sel.unregister(pidfd)
                pid, conn = children.pop(pidfd)
                os.close(pidfd)
                _, status = os.waitpid(pid, 0)
                try:
                    conn.sendall(json.dumps({"status": status}).encode())
                except OSError:
                    pass
                conn.close()


def forked_driver(req, fds, lsock, conn, sel, children):
    """In a child of the zygote: becomes one warm driver."""
    import ctypes
    import signal

    sel.close()
    lsock.close()
    conn.close()
    for pidfd in children:
        os.close(pidfd)
    os.setsid()
    # Dies with the zygote, which dies with the runner.
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(fds[2], 1)
    os.dup2(fds[2], 2)
    os.dup2(fds[0], 3)
    os.dup2(fds[1], 4)
    os.closerange(5, 1 << 16)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    sys.argv = [sys.argv[0]] + list(req["argv"])
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    return main()


def main():
    args = sys.argv[1:]
    if args[:1] == ["--zygote"]:
        return zygote(3)
    warm_mode = args[:1] == ["--warm"]
    if warm_mode:
        args = args[1:]
    with open(args[0], encoding="utf-8") as f:
        cfg = json.load(f)
    try:
        if warm_mode:
            return asyncio.run(warm(cfg, Channel(3, 4)))
        return asyncio.run(run(cfg))
    except Exception:
        traceback.print_exc()
        return 2


if __name__ == "__main__":
    sys.exit(main())
