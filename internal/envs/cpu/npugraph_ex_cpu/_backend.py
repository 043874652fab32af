"""The Dynamo backend: options, AOTAutograd, passes, static-graph runtime.

Sources read (never copied): 26.0.0 npugraph_ex/npugraph_ex/npu_fx_compiler.py
(_npu_backend, _compile_graph_with_aot: aot_module_simplified with the same
compiler for forward, inference and backward and keep_inference_input_mutations;
_NpuFxCompiler._gen_compiled_gm; compile_fx; _mark_static_inputs_attr);
Ascend/pytorch torch_npu/dynamo/__init__.py (the backend name "npugraph_ex",
a fresh config per compilation, options passed as the "options" keyword);
7.3.0 python/torchair/npu_fx_compiler.py (same flow).
"""

import logging
import weakref

import torch
from torch._functorch.aot_autograd import aot_module_simplified

from . import _graph, _options, _passes

log = logging.getLogger("npugraph_ex_cpu")

_live_graphs = weakref.WeakValueDictionary()


def graphs():
    """The StaticGraph runtimes still alive, by name ("graph_<N>")."""
    return dict(_live_graphs)


def _static_input_indices(num_dynamo_inputs, example_inputs):
    # Parameters and buffers: AOT passes them at fixed positions and Dynamo
    # marks them static; the release reads the same two facts
    # (_mark_static_inputs_attr).
    try:
        from torch._inductor.compile_fx import get_static_input_idxs
        from torch._inductor.utils import num_fw_fixed_arguments
        fixed = num_fw_fixed_arguments(num_dynamo_inputs, len(example_inputs))
        return set(get_static_input_idxs(fixed))
    except Exception:  # older or newer torch without these helpers
        return set()


def _compiler(opts, num_dynamo_inputs):
    def compile_graph(gm, example_inputs):
        name = _graph.next_graph_name()
        mutated = _passes.mutated_inputs(gm)
        params = _static_input_indices(num_dynamo_inputs, example_inputs) - mutated
        _passes.run_passes(gm, example_inputs, opts)
        if opts.force_eager:
            log.warning("npugraph_ex (CPU stand-in): force_eager=True: %s runs eagerly after the FX passes, "
                        "nothing is captured; turn it off once the fault is isolated.", name)
        runtime = _graph.StaticGraph(gm.forward, opts, name, mutated, params)
        runtime.graph_module = gm
        _live_graphs[name] = runtime
        return runtime
    return compile_graph


def _eager_backward(gm, example_inputs):
    # The release captures the backward graph too; the stand-in runs it as is.
    return gm


def npugraph_ex_backend(gm, example_inputs, **kwargs):
    """torch.compile(model, backend="npugraph_ex", options={...}).

    kwargs are what torch.compile passes a named backend: "options" and,
    unless it is "default", "mode" (ignored, as the release ignores it)."""
    opts = _options.process_options(kwargs.get("options"))
    compile_graph = _compiler(opts, len(example_inputs))
    return aot_module_simplified(gm, example_inputs, fw_compiler=compile_graph,
                                 inference_compiler=compile_graph, bw_compiler=_eager_backward,
                                 keep_inference_input_mutations=True, decompositions={})


def compile_fx(gm, example_inputs=None, options=None):
    """The fw_compiler of a custom backend (26.0.0:
    torch.npu.npugraph_ex.compile_fx(gm, example_inputs, options)): options are
    validated, then the AOT graph gm is optimised and wrapped in a
    static-graph runtime."""
    opts = _options.process_options(options or {})
    example_inputs = list(example_inputs or [])
    return _compiler(opts, len(example_inputs))(gm, example_inputs)


def graph_pool_handle():
    """Stands in for torch.npu.graph_pool_handle(): a (0, id) pair, the shape
    the release checks for use_graph_pool. There is no pool on the CPU."""
    global _pool_ids
    _pool_ids += 1
    return (0, _pool_ids)


_pool_ids = 0
