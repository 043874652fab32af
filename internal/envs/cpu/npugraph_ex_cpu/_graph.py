"""Capture into static buffers and replay, per FX graph, the way the released
AclGraph manages them, with a Python re-execution standing in for the device
graph.

Sources read (never copied): 26.0.0
npugraph_ex/npugraph_ex/_acl_concrete_graph/acl_graph.py (AclGraph.__call__,
compile, capture, process_input, reconstruct_outputs, reset_captured_graph);
7.3.0 python/torchair/_acl_concrete_graph/acl_graph.py (the same logic).
"""

import itertools
import logging
import warnings

import torch
from torch._dynamo.utils import counters

log = logging.getLogger("npugraph_ex_cpu")

# Process-wide, as the release numbers its graphs "graph_<N>".
_graph_ids = itertools.count(1)

OUTPUT_REUSE_WARNING = (
    "npugraph_ex (CPU stand-in): outputs of a captured graph live in fixed memory that the next "
    "replay writes again; an output you keep from an earlier call may change. Copy what you keep, "
    "or set clone_output=True (acl_graph.py, reconstruct_outputs).")


def next_graph_name():
    return f"graph_{next(_graph_ids)}"


def capture_limit_message(name, key, limit):
    # The first sentence is the released message's (acl_graph.py, 7.3.0 and
    # 26.0.0: "The static_capture_size_limit reached when capturing fx_graph
    # ... we will fall back to eager for all subsequent executions."), kept so
    # that a learner's filter for it matches on both.
    return (f"The static_capture_size_limit reached when capturing fx_graph {name} with graph key {key}, "
            f"we will fall back to eager for all subsequent executions. "
            f"The current static_capture_size_limit is {limit}; each recapture costs time and device "
            f"resources (streams, memory). Raise capture_limit if the recaptures are expected.")


class _Captured:
    """One captured graph: its static inputs, the graph to replay, its static
    outputs."""

    def __init__(self, key):
        self.key = key
        self.static_inputs = {}   # input index -> tensor the replay reads
        self.mutated_ptrs = {}    # input index -> data_ptr captured (mutated inputs)
        self.outputs = None       # list: the tensors the replay writes


class StaticGraph:
    """The runtime of one compiled FX graph (one AclGraph in the release)."""

    def __init__(self, forward, opts, name, mutated, params):
        self.forward = forward
        self.opts = opts
        self.name = name
        self.mutated = set(mutated)   # graph-input indices written by the graph
        self.params = set(params)     # graph-input indices that are parameters
        self.graphs = {}              # graph key -> _Captured
        self.fallback_to_eager = False
        # use_graph_pool implies no reuse inside the FX graph
        # (fx2acl_converter.py, optimize_graph_without_runtime).
        self.reuse_in_fx = bool(opts.reuse_graph_pool_in_same_fx) and opts.use_graph_pool is None
        self.replays = 0
        self.eager_runs = 0

    # The key of a captured graph: the values of the integer inputs and the
    # shapes of the tensors (the release keys on the symbolic inputs whose
    # value a replay cannot update).
    @staticmethod
    def graph_key(args):
        parts = []
        for a in args:
            if isinstance(a, torch.Tensor):
                parts.append(tuple(a.shape))
            elif isinstance(a, (int, torch.SymInt)):
                parts.append(int(a))
        return str(tuple(parts))

    def __call__(self, *args):
        if self.opts.force_eager:
            return self._eager(args)
        key = self._compile(args)
        if self.fallback_to_eager:
            return self._eager(args)
        self._process_input(self.graphs[key], args)
        self._replay(self.graphs[key], args)
        return self._outputs(self.graphs[key])

    def _eager(self, args):
        self.eager_runs += 1
        return self.forward(*args)

    def _compile(self, args):
        if self.fallback_to_eager:
            return None
        key = self.graph_key(args)
        graph = self.graphs.get(key)
        if graph is not None:
            if all(args[i].data_ptr() == p for i, p in graph.mutated_ptrs.items()):
                return key
            counters["npugraph_ex"]["recapture_due_to_mutated_input_change_" + self.name] += 1
            del self.graphs[key]
        elif len(self.graphs) == self.opts.capture_limit:
            msg = capture_limit_message(self.name, key, self.opts.capture_limit)
            warnings.warn(msg)
            log.warning(msg)
            self.fallback_to_eager = True
            self._reset()
            return None
        self._capture(key, args)
        return key

    def _reset(self):
        counters["npugraph_ex"].pop("captured_" + self.name, None)
        counters["npugraph_ex"].pop("recapture_due_to_mutated_input_change_" + self.name, None)
        self.graphs = {}

    def _capture(self, key, args):
        graph = _Captured(key)
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                continue
            if i in self.mutated:
                # Written by the graph: captured at its address, recaptured
                # when a later call passes another tensor.
                graph.mutated_ptrs[i] = a.data_ptr()
                graph.static_inputs[i] = a
            elif i in self.params:
                graph.static_inputs[i] = a
            elif self.opts.clone_input:
                # A private buffer: the caller's tensor is never written.
                graph.static_inputs[i] = torch.empty_like(a, memory_format=torch.contiguous_format)
            else:
                # clone_input=False: the caller's own tensor becomes the
                # static buffer; later inputs are copied into it.
                graph.static_inputs[i] = a
        # The device capture records kernels without running them; here the
        # forward runs once to learn the outputs, which become the static
        # outputs every replay writes into. It runs on copies of the mutated
        # inputs, so that only the replay writes them, once, as on a device.
        probe = self._static_args(graph, args)
        for i in self.mutated:
            if isinstance(probe[i], torch.Tensor):
                probe[i] = probe[i].clone()
        with torch.no_grad():
            outs = self.forward(*probe)
        graph.outputs = [o.detach() if isinstance(o, torch.Tensor) else o for o in outs]
        self.graphs[key] = graph
        counters["npugraph_ex"]["captured_" + self.name] = len(self.graphs)

    @staticmethod
    def _static_args(graph, args):
        return [graph.static_inputs.get(i, a) for i, a in enumerate(args)]

    def _process_input(self, graph, args):
        for i, buf in graph.static_inputs.items():
            if i in self.mutated or i in self.params:
                continue
            # clone_input=True copies every time; clone_input=False copies
            # when the caller passes another tensor than the captured one.
            if self.opts.clone_input or buf.data_ptr() != args[i].data_ptr():
                with torch.no_grad():
                    buf.copy_(args[i])

    def _replay(self, graph, args):
        self.replays += 1
        with torch.no_grad():
            outs = self.forward(*self._static_args(graph, args))
            for static, new in zip(graph.outputs, outs):
                if isinstance(static, torch.Tensor) and static.data_ptr() != new.data_ptr():
                    static.copy_(new)

    def _outputs(self, graph):
        # One captured graph, or no pool reuse: the same output tensors every
        # call. Several graph keys sharing the pool: clone_output decides.
        if not self.reuse_in_fx or len(self.graphs) == 1:
            return list(graph.outputs)
        if self.opts.clone_output:
            return [o.clone() if isinstance(o, torch.Tensor) else o for o in graph.outputs]
        warnings.warn(OUTPUT_REUSE_WARNING)
        warnings.filterwarnings("ignore", message=OUTPUT_REUSE_WARNING)
        return list(graph.outputs)
