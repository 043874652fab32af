"""npugraph_ex_cpu: a CPU stand-in for TorchAir's npugraph_ex backend.

Importing this package (once or many times) registers, in this process:

- the Dynamo backend "npugraph_ex", so that
  torch.compile(model, backend="npugraph_ex", options={...}) works on a CPU
  with PyTorch >= 2.1, as torch_npu registers it on an Ascend host;
- the ops torch.ops.air.{scope_enter, scope_exit, record, wait} (the released
  7.3.0 / 26.0.0 spelling) and torch.ops.npugraph_ex.{...} (unreleased
  master's spelling), with the released schemas and side effects.

It follows the released TorchAir 7.3.0 and 26.0.0 sources (Ascend/torchair,
branches 7.3.0 and 26.0.0; each module cites the files it was checked
against). NPUGRAPH_EX_CPU_RELEASE=7.3.0|26.0.0 (default 26.0.0) selects whose
option table is accepted.

What it does as the release does
--------------------------------
1. Options are checked when Dynamo first compiles (the first call of the
   compiled model), not at torch.compile: an unknown name raises
   ValueError("Invalid option '<name>', allowed options: [<sorted names>]")
   (Dynamo wraps it in BackendCompilerFailed); a wrong value raises what the
   release's config field raises. 7.3.0 accepts graph_dump_type/path and not
   the 26.0.0 additions (deadlock_check, dump_tensor_data, data_dump_*,
   remove_cat_ops, super_kernel_*).
2. AOTAutograd (aot_module_simplified) with keep_inference_input_mutations,
   then the FX passes in the release's order (see _passes.py): custom pre
   pass, remove_noop_ops, view_to_reshape, custom post pass, dead-code
   elimination (the side-effectful ops above survive it), inplace_pass,
   input_inplace_pass.
3. Capture and replay per FX graph (see _graph.py): the first call of a graph
   key captures, every call copies the inputs into the static input buffers
   and replays, the outputs are the same static tensors every call (a kept
   output is overwritten by the next replay).
   - clone_input=True (default): the static input buffer is a private copy;
     clone_input=False: the caller's tensor from the capture call is the
     static buffer. Either way a later call's input is copied into it (with
     False only when the caller passes another tensor), so with False the
     tensor passed at capture is overwritten by later inputs.
   - clone_output only matters when one FX graph has several graph keys
     (dynamic=True, several shapes) sharing its memory pool: True returns
     clones, False the static outputs (with a warning). With one graph key,
     or use_graph_pool set / reuse_graph_pool_in_same_fx=False, the static
     outputs are returned whatever clone_output says.
   - Graph inputs the graph mutates are captured at their address and a call
     with another tensor recaptures (counter
     recapture_due_to_mutated_input_change_<graph>); parameters and buffers
     are used in place, never copied.
   - capture_limit (default 64) graph keys per FX graph: the next new key
     warns "The static_capture_size_limit reached when capturing fx_graph
     <graph> with graph key <key>, we will fall back to eager for all
     subsequent executions. ..." (warnings.warn and the log), drops the
     captured graphs and runs that FX graph eagerly for ALL later calls,
     including shapes captured before.
   - torch._dynamo.utils.counters["npugraph_ex"]["captured_graph_<N>"] counts
     the captured graph keys; N is process-wide.
4. force_eager=True: the passes still run, then the graph runs eagerly on
   every call, nothing is captured (with a log warning).

Where it must differ (no device, no aclgraph)
---------------------------------------------
- There is no NPU, no torch_npu, no torch.npu and no aclgraph: "capture" runs
  the graph once in Python to learn its outputs (the device capture records
  kernels without running them) and "replay" re-runs the optimised FX graph
  on the static buffers and copies the results into the static outputs. No
  speed-up, no launch-overhead saving, no memory-pool accounting; timings
  mean nothing.
- The graph key is the integer inputs' values and the tensor inputs' shapes
  (the release keys on the symbolic inputs a replay cannot update).
- Several graph keys of one FX graph do not share memory on the CPU: a
  replay of key B never overwrites an output kept from key A (the device pool
  may). use_graph_pool accepts graph_pool_handle() (a (0, n) pair, standing
  in for torch.npu.graph_pool_handle()) and only turns off reuse inside the
  FX graph, as the release does.
- Not run: recover_view_inplace_pattern, pattern_fusion_pass (torch_npu
  fusion ops), remove_cat_ops, the stream/event passes (no streams),
  static kernels, SuperKernel, data dump, deadlock check, frozen_parameter's
  address checks. Their options are accepted and validated, nothing more.
- inplace_pass uses torch.fx.passes.reinplace (the base of the release's
  multi-stream-aware variant); input_inplace_pass is a CPU re-implementation
  of the same rewrite for the aten ops that have an in-place overload.
- The backward graph of a training step runs as AOT produced it (the release
  captures it too).
- scope_enter/scope_exit with need_execute=True push and pop a per-thread
  attribute stack (scope_stack()) that nothing on the CPU consumes; record
  returns an empty tensor, wait does nothing.
- Messages are the stand-in's own words, except the first sentence of the
  capture-limit warning and the "Invalid option" message shape, which
  learners' code may match.

Public helpers: compile_fx (the 26.0.0 torch.npu.npugraph_ex.compile_fx for
custom backends), graph_pool_handle, graphs() (live runtimes by name, for
tests), scope_stack(), release(), register() (what the import does).
"""

import torch

from . import _ops
from ._backend import compile_fx, graph_pool_handle, graphs, npugraph_ex_backend
from ._graph import StaticGraph
from ._ops import scope_stack
from ._options import process_options, release

__all__ = ["compile_fx", "graph_pool_handle", "graphs", "npugraph_ex_backend", "process_options",
           "register", "release", "scope_stack", "StaticGraph", "BACKEND_NAME"]

BACKEND_NAME = "npugraph_ex"


def register():
    """Registers the ops and the backend unless they exist (a real TorchAir,
    or an earlier import). Returns True when the backend "npugraph_ex" is
    this stand-in."""
    _ops.register_ops()
    from torch._dynamo.backends.registry import lookup_backend, register_backend
    if BACKEND_NAME not in torch._dynamo.list_backends(exclude_tags=()):
        register_backend(compiler_fn=npugraph_ex_backend, name=BACKEND_NAME)
    return lookup_backend(BACKEND_NAME) is npugraph_ex_backend


register()

