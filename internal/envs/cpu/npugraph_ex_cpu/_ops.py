"""The multi-stream marker ops, registered with torch.library as the released
sources register them.

Sources read (never copied):
- 26.0.0: npugraph_ex/npugraph_ex/scope/_scope.py (scope_enter, scope_exit),
  npugraph_ex/npugraph_ex/ops/_record_wait.py (record, wait), both in the
  library namespace "air" (npugraph_ex/npugraph_ex/{scope,ops}/_lib.py).
- 7.3.0: python/torchair/scope/_scope.py, python/torchair/ops/_record_wait.py,
  same schemas, namespace "air".
- master (unreleased): the same schemas in the namespace "npugraph_ex"
  (npugraph_ex/npugraph_ex/ops/_lib.py); its docs
  (docs/zh/npugraph_ex/advanced/post_grad_custom_pass.md) spell them
  torch.ops.npugraph_ex.*, the 26.0.0 docs spell them torch.ops.air.*.

Both namespaces are registered so that passes written against either spelling
run. What matters for graph passes is kept exactly: scope_enter, scope_exit and
wait are side-effectful (FX dead-code elimination keeps them); record is not
(it survives only while a wait uses its result), as in the sources.
"""

import threading

import torch
from torch.fx.node import has_side_effect

# Released TorchAir spells the namespace "air"; unreleased master "npugraph_ex".
NAMESPACES = ("air", "npugraph_ex")

# Library objects must stay alive for their registrations to stay.
_LIBS = {}

_local = threading.local()


def scope_stack():
    """The attribute scopes entered with need_execute=True on this thread
    (a list of dicts, innermost last). On an NPU these scopes tag the ops
    traced inside them (stream label, core limits); on the CPU nothing reads
    them except tests and learners who want to see the effect."""
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def _enter(keys, values, need_execute=False):
    if need_execute:
        scope_stack().append(dict(zip(keys, values)))


def _exit(need_execute=False):
    if need_execute and scope_stack():
        scope_stack().pop()


def _record(*, device=None):
    # The event marker is an empty tensor; its only use is as wait()'s input.
    return torch.empty(0, device=device)


def _record_meta(*, device=None):
    return torch.empty(0, device="meta")


def _wait(tensors):
    return None


def _define(ns):
    ops = getattr(torch.ops, ns)
    lib = None

    def library():
        nonlocal lib
        if lib is None:
            lib = torch.library.Library(ns, "FRAGMENT")  # noqa: TOR901
            _LIBS[ns] = lib
        return lib

    if not hasattr(ops, "scope_enter"):
        library().define("scope_enter(str[] keys, str[] values, bool need_execute=False) -> None")
        for key in ("CPU", "BackendSelect", "Meta"):
            library().impl("scope_enter", _enter, key)
        has_side_effect(ops.scope_enter.default)
    if not hasattr(ops, "scope_exit"):
        library().define("scope_exit(bool need_execute=False) -> None")
        for key in ("CPU", "BackendSelect", "Meta"):
            library().impl("scope_exit", _exit, key)
        has_side_effect(ops.scope_exit.default)
    if not hasattr(ops, "record"):
        library().define("record(*, Device? device=None) -> Tensor")
        library().impl("record", _record, "BackendSelect")
        library().impl("record", _record_meta, "Meta")
    if not hasattr(ops, "wait"):
        library().define("wait(Tensor[] x) -> ()")
        for key in ("BackendSelect", "CPU", "Meta"):
            library().impl("wait", _wait, key)
        has_side_effect(ops.wait.default)


def register_ops():
    """Defines the ops once per process (a second call, or ops that a real
    TorchAir already defined, leave everything as it is)."""
    for ns in NAMESPACES:
        _define(ns)
