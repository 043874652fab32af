"""The FX passes the backend runs on the AOT graph, in the release's order,
as far as they mean something on a CPU.

Order read from 26.0.0 npugraph_ex/npugraph_ex/npu_fx_compiler.py
(_optimize_fx) and npugraph_ex/npugraph_ex/_acl_concrete_graph/fx2acl_converter.py
(optimize_graph_without_runtime); 7.3.0 python/torchair/npu_fx_compiler.py
and python/torchair/_acl_concrete_graph/fx2acl_converter.py have the same
order without remove_cat_ops:

  post_grad_custom_pre_pass -> remove_noop_ops -> recover_view_inplace_pattern
  -> pattern_fusion_pass -> view_to_reshape -> post_grad_custom_post_pass
  -> remove_cat_ops (26.0.0) -> stream/event passes -> eliminate_dead_code
  -> inplace_pass -> input_inplace_pass

Run here: the two custom passes (called as pass(gm, example_inputs, options)),
remove_noop_ops (the same inductor function the release calls),
view_to_reshape, eliminate_dead_code, inplace_pass (torch.fx.passes.reinplace,
which the release's multi-stream-aware variant is built on; skipped with a
warning where it fails, as the release does on torch >= 2.5) and
input_inplace_pass (a CPU re-implementation of the idea: an out-of-place op
whose only use is the copy_ back into a mutated graph input becomes the
in-place op on that input).

Not run (no CPU meaning): recover_view_inplace_pattern and pattern_fusion_pass
(their patterns are torch_npu ops), remove_cat_ops (an NPU out= rewrite), the
stream/event passes (no streams). Each pass's name is appended to
gm.meta["npugraph_ex_passes"] when it ran, so tests and learners can see it.
"""

import warnings

import torch

aten = torch.ops.aten


def _ran(gm, name):
    gm.meta.setdefault("npugraph_ex_passes", []).append(name)


def remove_noop_ops(gm):
    try:
        from torch._inductor.fx_passes.post_grad import remove_noop_ops as inductor_remove_noop_ops
    except ImportError:
        warnings.warn("Skip removing noop ops: torch._inductor.fx_passes.post_grad.remove_noop_ops "
                      "is missing (it needs torch >= 2.2)")
        return
    inductor_remove_noop_ops(gm.graph)
    _ran(gm, "remove_noop_ops")


def view_to_reshape(gm):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target == aten.view.default:
            node.target = aten.reshape.default
    _ran(gm, "view_to_reshape")


def eliminate_dead_code(gm):
    gm.graph.eliminate_dead_code()
    _ran(gm, "eliminate_dead_code")


def inplace_pass(gm, example_inputs):
    from torch.fx.passes.reinplace import reinplace
    try:
        reinplace(gm, *example_inputs)
    except Exception as e:  # the release skips the pass on failure (torch >= 2.5)
        warnings.warn(f"npugraph_ex (CPU stand-in): skipped inplace_pass for this graph: {type(e).__name__}: {e}")
        return
    _ran(gm, "inplace_pass")


def _inplace_overload(target):
    """aten.add.Tensor -> aten.add_.Tensor, or None."""
    if not isinstance(target, torch._ops.OpOverload):
        return None
    packet = getattr(aten, target._schema.name.split("::")[-1] + "_", None)
    if packet is None:
        return None
    return getattr(packet, target._overloadname, None)


def input_inplace_pass(gm):
    """`t = op(x, ...); ...; copy_(x, t)` with x a graph input becomes
    `t = op_(x, ...)` without the copy_, provided nothing reads x after op
    (it would see the new value early)."""
    graph = gm.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    changed = 0
    for copy in list(graph.nodes):
        if copy.op != "call_function" or copy.target != aten.copy_.default:
            continue
        dst, src = copy.args[0], copy.args[1]
        if dst.op != "placeholder" or not isinstance(src, torch.fx.Node) or src.op != "call_function":
            continue
        if not src.args or src.args[0] is not dst:
            continue
        inplace = _inplace_overload(src.target)
        if inplace is None:
            continue
        # After the rewrite dst holds the result from src on: nothing may
        # read dst's old value later (src's own users read the result, the
        # same values).
        later_readers = [u for u in dst.users if u is not src and u is not copy and order[u] > order[src]]
        if later_readers:
            continue
        src.target = inplace
        copy.replace_all_uses_with(dst)
        graph.erase_node(copy)
        changed += 1
    if changed:
        graph.lint()
    _ran(gm, "input_inplace_pass")
    return changed


def run_passes(gm, example_inputs, opts):
    """Runs the passes the options enable, in the release's order."""
    if opts.post_grad_custom_pre_pass is not None:
        opts.post_grad_custom_pre_pass(gm, example_inputs, opts)
        _ran(gm, "post_grad_custom_pre_pass")
    if opts.remove_noop_ops:
        remove_noop_ops(gm)
    view_to_reshape(gm)
    if opts.post_grad_custom_post_pass is not None:
        opts.post_grad_custom_post_pass(gm, example_inputs, opts)
        _ran(gm, "post_grad_custom_post_pass")
    eliminate_dead_code(gm)
    if opts.inplace_pass:
        inplace_pass(gm, example_inputs)
    if opts.input_inplace_pass:
        input_inplace_pass(gm)
    gm.recompile()
    return gm


def mutated_inputs(gm):
    """Indices of placeholders the graph writes to (a copy_ into them, or an
    op whose schema marks the argument as written)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    index = {n: i for i, n in enumerate(placeholders)}
    found = set()
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        for arg, spec in zip(node.args, node.target._schema.arguments):
            if isinstance(arg, torch.fx.Node) and arg in index and spec.alias_info is not None \
                    and spec.alias_info.is_write:
                found.add(index[arg])
    return found

