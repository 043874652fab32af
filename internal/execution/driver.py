"""npugrade execution driver: runs one notebook cell by cell with nbconvert's
ExecutePreprocessor (nbclient) and writes the partial notebook after every
cell, so that a kernel that dies or a run that is killed still leaves the
outputs of the cells before it.

It is embedded in the npugrade binary (internal/execution) and run by the
runner, OUTSIDE the sandbox: only the kernel it starts is confined. Usage:

    python3 -I driver.py CONFIG.json

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
        await asyncio.sleep(self.limits["interrupt_grace"])
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
    write_atomic(path, nbformat.writes(nb, version=4))


async def run(cfg):
    nb = nbformat.read(cfg["notebook"], as_version=4)
    default = int(cfg["cell_timeout"])

    def timeout_func(cell):
        g = cell.get("metadata", {}).get("grader", {}) or {}
        t = g.get("timeout")
        try:
            return int(t) if t else default
        except Exception:
            return default

    c = Config()
    for cls, traits in (cfg.get("config") or {}).items():
        for k, v in traits.items():
            c[cls][k] = v
    limits = {k: cfg.get(k) or 0 for k in ("max_cell_output", "max_notebook_output", "max_cell_outputs")}
    limits["interrupt_grace"] = float(cfg.get("interrupt_grace") or 5)
    client = Client(
        nb,
        limits,
        resources={"metadata": {"path": cfg["cwd"]}},
        config=c,
        timeout=default,
        timeout_func=timeout_func,
        interrupt_on_timeout=True,
        allow_errors=True,
        store_widget_state=False,
        raise_on_iopub_timeout=False,
        record_timing=True,
        startup_timeout=int(cfg.get("startup_timeout") or 60),
    )
    client.reset_execution_trackers()
    try:
        async with client.async_setup_kernel():
            info = await client.async_wait_for_reply(await ensure(client.kc.kernel_info()))
            if info is None or "language_info" not in info["content"]:
                raise RuntimeError("the kernel did not answer kernel_info")
            nb.metadata["language_info"] = info["content"]["language_info"]
            save(nb, cfg["output"])
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
    return 0


async def ensure(x):
    if asyncio.iscoroutine(x) or isinstance(x, asyncio.Future):
        return await x
    return x


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    try:
        return asyncio.run(run(cfg))
    except Exception:
        traceback.print_exc()
        return 2


if __name__ == "__main__":
    sys.exit(main())
