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
    reply, ename, evalue   the kernel's execute_reply status ("error" when
                           the cell raised, whatever its outputs show) and
                           its exception
    tampered               the kernel guard (GUARD below) could not vouch
                           for the kernel before or after this cell: the
                           notebook changed how the kernel runs or checks
                           code (a failure for a test cell)
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
        self.unconfirmed = 0  # interrupt requests the kernel has not answered
        self.expressions = None  # user_expressions for the next cell's request
        self.last_reply = None  # the last cell's execute_reply

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

    async def _check_raise_for_error(self, cell, cell_index, exec_reply):
        # The kernel's own word on the cell, not its outputs: a notebook
        # can hide a traceback (showtraceback, set_custom_exc) but the
        # execute_reply still says "error".
        self.last_reply = exec_reply
        if exec_reply is not None:
            content = exec_reply.get("content", {})
            status = content.get("status")
            if status == "error":
                note(cell, reply="error", ename=str(content.get("ename", ""))[:200],
                     evalue=str(content.get("evalue", ""))[:1000])
            elif status:
                note(cell, reply=str(status)[:20])
        return await ensure(super()._check_raise_for_error(cell, cell_index, exec_reply))

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
        # As nbclient does with interrupt_on_timeout, through interrupt().
        await self.interrupt()
        if self.error_on_timeout:
            return {"content": {**self.error_on_timeout, "status": "error"}}
        return None

    async def interrupt(self):
        # With interrupt_mode "message" (the sandbox's kernels) the kernel's
        # control thread raises the signal when it reads the request, which
        # on a starved host can be after the cell ended and the next one
        # began: settle_interrupts waits for its reply before the next cell.
        if getattr(self.km.kernel_spec, "interrupt_mode", "signal") == "message":
            self.unconfirmed += 1
        await ensure(self.km.interrupt_kernel())

    async def settle_interrupts(self, timeout):
        """Waits up to timeout seconds for the kernel to confirm every
        interrupt sent, so none is raised in the cell that runs next."""
        sock = getattr(self.km, "_control_socket", None)
        deadline = time.monotonic() + timeout
        while self.unconfirmed > 0 and sock is not None:
            _, msg = self.km.session.recv(sock)
            if msg is None:
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(0.01)
            elif msg.get("msg_type") == "interrupt_reply":
                self.unconfirmed -= 1
        self.unconfirmed = 0

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
                    await self.interrupt()
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
    guard = Guard(client)
    send_expressions(client)
    try:
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            write_atomic(cfg["progress"], json.dumps({"cell": index}))
            solution = is_solution(cell)
            if solution and not guard.installed:
                await guard.install()
            elif not solution and guard.installed and not guard.clean:
                # Repairs what the learner's cells changed before a test.
                await guard.restore(cell, after=False)
            client.current = (index, cell)
            client.interrupted = None
            # The guard's check rides on the cell's own request (a user
            # expression, evaluated after the cell's code when it ran
            # without error): one round trip fewer per cell, about a
            # third of a job's messages. When it got no answer there,
            # the separate request below asks again.
            nonce = None
            if guard.installed and not guard.failed:
                nonce, client.expressions = guard.expression()
            client.last_reply = None
            try:
                await client.async_execute_cell(cell, index, store_history=True)
            except DeadKernelError:
                note(cell, kernel_died=True)
                save(nb, cfg["output"])
                write_atomic(cfg["progress"], json.dumps({"cell": index, "kernel_died": True}))
                return 0
            finally:
                client.current = None
                client.expressions = None
                if client.killer is not None:
                    client.killer.cancel()
                    client.killer = None
            if client.unconfirmed and not cell.get("metadata", {}).get(META, {}).get("interrupt_ignored"):
                await client.settle_interrupts(client.limits["interrupt_grace"])
            ignored = cell.get("metadata", {}).get(META, {}).get("interrupt_ignored")
            if solution or not guard.installed:
                # Restored after the solution's code: the next test cell
                # needs no request of its own (a failed answer is not the
                # solution cell's fault: that test cell asks again).
                guard.clean = False
                if nonce and not ignored:
                    guard.clean = guard.judge(None, client.last_reply, nonce, after=False) is True
            elif not ignored:
                # A test cell that changed the kernel (through the
                # learner's functions it called) fails.
                if not nonce or guard.judge(cell, client.last_reply, nonce, after=True) is None:
                    await guard.restore(cell, after=True)
            save(nb, cfg["output"])
        write_atomic(cfg["progress"], json.dumps({"done": True}))
    except DeadKernelError:
        # Died between cells (a thread calling os._exit after its cell ended).
        write_atomic(cfg["progress"], json.dumps({"kernel_died": True}))
    return 0


def send_expressions(client):
    """Makes the kernel client add client.expressions (once) to the next
    execute request: nbclient sends a cell without user expressions."""
    kc = client.kc
    plain = kc.execute

    def execute(code, *args, **kw):
        expr, client.expressions = client.expressions, None
        if expr and "user_expressions" not in kw:
            kw["user_expressions"] = expr
        return plain(code, *args, **kw)

    kc.execute = execute


def is_solution(cell):
    g = cell.get("metadata", {}).get("grader") or {}
    return isinstance(g, dict) and bool(g.get("solution"))


# GUARD runs in the kernel as the module npugrade_guard. install() takes a
# snapshot of what tests rely on before the first solution cell runs;
# restore(nonce) puts it back before a test cell and reports what had
# changed. Learner code owns the kernel, so this is not a boundary: it
# repairs the known ways of making a failing test pass (hidden
# tracebacks, replaced print/stdout/asserting helpers, input and AST
# transformers, patched shell or kernel methods), and the driver fails
# closed: a test cell is failed when restore cannot answer with the
# nonce's MAC (the guard was removed or the kernel no longer runs code as
# sent) or when the test cell itself changed any of it.
GUARD = r"""
import builtins, hashlib, hmac, sys

_MODULES = ("builtins", "math", "operator", "functools", "itertools", "re", "json", "io",
            "os", "unittest", "numpy", "numpy.testing", "torch", "torch.testing",
            "torch.nn.functional", "IPython.display")
_SYS = ("stdout", "stderr", "stdin", "displayhook", "excepthook", "__stdout__",
        "__stderr__", "__displayhook__", "__excepthook__", "breakpointhook")
_state = {}


def _callable(v):
    return callable(v) or isinstance(v, (staticmethod, classmethod, property, type(sys)))


def _same(a, b):
    # A bound method is a new object at each attribute read.
    if a is b:
        return True
    return type(a) is type(b) and type(a).__name__ == "method" and a == b


def _library(f):
    # Callbacks and printers that libraries register as they are imported
    # (matplotlib's inline backend) stay; those defined in cells go.
    code = getattr(getattr(f, "__func__", f), "__code__", None)
    return code is not None and "-packages" in code.co_filename


def _objects():
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    objs = [shell, getattr(shell, "displayhook", None), getattr(shell, "display_pub", None),
            getattr(shell, "display_formatter", None), getattr(shell, "events", None),
            kernel, getattr(kernel, "session", None), getattr(kernel, "iopub_socket", None),
            getattr(kernel, "iopub_thread", None), sys.stdout, sys.stderr]
    try:
        from IPython.core.interactiveshell import ExecutionResult
        objs.append(ExecutionResult)
    except Exception:
        pass
    for name in ("torch", "numpy"):
        m = sys.modules.get(name)
        if m is not None:
            objs += [getattr(m, "Tensor", None), getattr(getattr(m, "_C", None), "TensorBase", None),
                     getattr(m, "ndarray", None)]
    return [o for o in objs if o is not None]


def _classes(objs):
    seen = []
    for o in objs:
        for c in (o if isinstance(o, type) else type(o)).__mro__:
            if c is not object and c not in seen:
                seen.append(c)
    return seen


def install(key):
    for name in ("numpy.testing", "torch.testing", "torch.nn.functional"):
        if name.split(".")[0] in sys.modules:
            try:
                __import__(name)
            except Exception:
                pass
    shell = get_ipython()
    objs = _objects()
    _state.update(
        key=key,
        # Only what restore compares (callables; all of builtins), so that
        # each restore walks a few thousand names, not every constant.
        modules={n: (sys.modules[n], {k: v for k, v in vars(sys.modules[n]).items() if n == "builtins" or _callable(v)})
                 for n in _MODULES if n in sys.modules},
        sys={n: getattr(sys, n) for n in _SYS if hasattr(sys, n)},
        trace=(sys.gettrace(), sys.getprofile()),
        meta_path=list(sys.meta_path), path_hooks=list(sys.path_hooks),
        classes=[(c, dict(vars(c))) for c in _classes(objs)],
        instances=[(o, dict(vars(o))) for o in objs if not isinstance(o, type) and hasattr(o, "__dict__")],
        lists=[(l, list(l)) for l in (shell.input_transformers_cleanup, shell.input_transformers_post,
                                      shell.ast_transformers) if isinstance(l, list)],
        events={k: list(v) for k, v in shell.events.callbacks.items()},
        custom=(shell.custom_exceptions, shell.CustomTB),
        printers=[(f, dict(f.type_printers), dict(f.deferred_printers), dict(getattr(f, "singleton_printers", {})))
                  for f in shell.display_formatter.formatters.values()],
    )


def _set(changed, what, fix):
    changed.append(what)
    try:
        fix()
    except Exception:
        pass


def restore(nonce):
    st, changed = _state, []
    shell = get_ipython()
    for name, (mod, snap) in st["modules"].items():
        if sys.modules.get(name) is not mod:
            _set(changed, "sys.modules[%r]" % name, lambda: sys.modules.__setitem__(name, mod))
        now = vars(mod)
        for k, v in snap.items():
            cur = now.get(k, _set)
            if cur is not v and not _same(cur, v):
                _set(changed, name + "." + k, lambda: setattr(mod, k, v))
    for k, v in st["sys"].items():
        if not _same(getattr(sys, k, None), v):
            _set(changed, "sys." + k, lambda: setattr(sys, k, v))
    if (sys.gettrace(), sys.getprofile()) != st["trace"]:
        _set(changed, "sys.settrace", lambda: (sys.settrace(st["trace"][0]), sys.setprofile(st["trace"][1])))
    for attr in ("meta_path", "path_hooks"):
        cur = getattr(sys, attr)
        if cur != st[attr]:
            _set(changed, "sys." + attr, lambda: cur.__setitem__(slice(None), st[attr]))
    for c, snap in st["classes"]:
        now = dict(vars(c))
        for k, v in now.items():
            if k not in snap and _callable(v):
                _set(changed, c.__name__ + "." + k, lambda: delattr(c, k))
        for k, v in snap.items():
            cur = now.get(k, _set)
            if cur is not v and not _same(cur, v) and _callable(v):
                _set(changed, c.__name__ + "." + k, lambda: setattr(c, k, v))
    for o, snap in st["instances"]:
        now = dict(vars(o))
        for k, v in now.items():
            if k not in snap and _callable(v) and not isinstance(v, type(sys)):
                _set(changed, type(o).__name__ + "()." + k, lambda: delattr(o, k))
            elif k in snap and not _same(snap[k], v) and _callable(snap[k]):
                _set(changed, type(o).__name__ + "()." + k, lambda: setattr(o, k, snap[k]))
    for l, snap in st["lists"]:
        if l != snap:
            _set(changed, "shell transformers", lambda: l.__setitem__(slice(None), snap))
    if (shell.custom_exceptions, shell.CustomTB) != st["custom"]:
        _set(changed, "shell.set_custom_exc", lambda: (setattr(shell, "custom_exceptions", st["custom"][0]),
                                                      setattr(shell, "CustomTB", st["custom"][1])))
    # Callbacks and printers added by cells: removed, but not counted as a
    # change (a test cell may import a library that registers its own).
    for k, cbs in shell.events.callbacks.items():
        snap = st["events"].get(k, [])
        cbs[:] = [f for f in cbs if f in snap or _library(f)]
    for f, tp, dp, sp in st["printers"]:
        for now, snap in ((f.type_printers, tp), (f.deferred_printers, dp), (getattr(f, "singleton_printers", {}), sp)):
            for k in list(now):
                if k in snap:
                    now[k] = snap[k]
                elif not _library(now[k]):
                    del now[k]
    mac = hmac.new(st["key"].encode(), nonce.encode(), hashlib.sha256).hexdigest()
    return mac + " " + ",".join(sorted(set(changed))[:8])
"""

GUARD_INSTALL = """exec(%r, {})"""
GUARD_INSTALL_BODY = """import sys, types
m = types.ModuleType("npugrade_guard")
m.get_ipython = get_ipython
exec(%r, m.__dict__)
sys.modules["npugrade_guard"] = m
"""


class Guard:
    """The driver's side of GUARD: installs it before the first solution
    cell and checks each test cell with restore()."""

    def __init__(self, client):
        import hashlib
        import hmac
        import secrets

        self.client, self.hmac, self.hashlib = client, hmac, hashlib
        self.key = secrets.token_hex(16)
        self.secrets = secrets
        self.installed = False
        self.clean = False  # nothing has run since the last restore
        self.failed = None  # why the guard could not be installed

    async def _request(self, code, expressions, timeout=30):
        kc = self.client.kc
        msg_id = await ensure(kc.execute(code, silent=True, store_history=False, user_expressions=expressions))
        saved = self.client.timeout
        self.client.timeout = timeout
        try:
            return await self.client.async_wait_for_reply(msg_id)
        finally:
            self.client.timeout = saved

    async def install(self):
        self.installed = True
        code = GUARD_INSTALL % (GUARD_INSTALL_BODY % (GUARD,),)
        try:
            # The snapshot is taken where restore runs (a user expression,
            # after the code): IPython swaps sys.displayhook and more only
            # while code runs.
            reply = await self._request(code, {"g": "__import__('npugrade_guard').install(%r)" % self.key})
        except DeadKernelError:
            raise
        except Exception as e:
            reply, err = None, e
        else:
            err = None
        c = (reply or {}).get("content", {})
        g = (c.get("user_expressions") or {}).get("g") or {}
        if c.get("status") != "ok" or g.get("status") != "ok":
            if g.get("status") == "error":
                c = g
            self.failed = "the kernel guard could not be installed: %s" % (err or "%s: %s" % (c.get("ename"), c.get("evalue")))
            print(self.failed, file=sys.stderr)
        self.clean = True

    async def restore(self, cell, after):
        """Restores the snapshot; notes tampered on cell when the guard does
        not answer as itself, or (after) when cell changed anything."""
        self.clean = False
        if self.failed:
            note(cell, tampered=self.failed)
            return
        nonce, expr = self.expression()
        try:
            reply = await self._request("", expr)
        except DeadKernelError:
            raise
        except Exception as e:
            note(cell, tampered="the kernel did not answer the test guard (%s)" % type(e).__name__)
            return
        if self.judge(cell, reply, nonce, after) is None:
            self.judge(cell, {}, nonce, after, final=True)

    def expression(self):
        """A fresh nonce and the user expression that restores the
        snapshot and answers with the nonce's MAC."""
        nonce = self.secrets.token_hex(16)
        return nonce, {"g": "__import__('npugrade_guard').restore(%r)" % nonce}

    def judge(self, cell, reply, nonce, after, final=False):
        """Reads restore's answer in reply: True when the guard vouched for
        the kernel (and, after a test, nothing changed), False when it
        noted cell tampered, None when the reply holds no answer (the cell
        raised, so the kernel skipped its user expressions) and final is
        not set."""
        content = (reply or {}).get("content", {})
        g = (content.get("user_expressions") or {}).get("g")
        if not g and not final:
            return None
        got = ""
        if (g or {}).get("status") == "ok":
            got = g.get("data", {}).get("text/plain", "")
        try:
            mac, changed = ast_literal(got).split(" ", 1)
        except Exception:
            mac, changed = "", ""
        want = self.hmac.new(self.key.encode(), nonce.encode(), self.hashlib.sha256).hexdigest()
        if not self.hmac.compare_digest(mac, want):
            if cell is not None:
                note(cell, tampered="the notebook changed how the kernel runs code, so this test cannot be trusted")
            return False
        if after and changed:
            if cell is not None:
                note(cell, tampered="the notebook changed the kernel while this test ran (%s)" % changed)
            return False
        self.clean = True
        return True


def ast_literal(s):
    import ast

    v = ast.literal_eval(s)
    if not isinstance(v, str):
        raise ValueError("not a string")
    return v


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
