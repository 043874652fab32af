"""Tests of the CPU stand-in: one test (at least) per behaviour its module
docstring documents. Run with: python3 -m unittest discover -s <this dir>
(with npugraph_ex_cpu importable, torch >= 2.1)."""

import importlib
import os
import unittest
import warnings

import torch
from torch._dynamo.utils import counters

import npugraph_ex_cpu
from npugraph_ex_cpu import _options


def compiled(fn, **kw):
    kw.setdefault("backend", "npugraph_ex")
    return torch.compile(fn, **kw)


def new_graphs(before):
    return [g for n, g in npugraph_ex_cpu.graphs().items() if n not in before]


class WithRelease:
    def __init__(self, rel):
        self.rel = rel

    def __enter__(self):
        self.old = os.environ.get("NPUGRAPH_EX_CPU_RELEASE")
        os.environ["NPUGRAPH_EX_CPU_RELEASE"] = self.rel

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("NPUGRAPH_EX_CPU_RELEASE", None)
        else:
            os.environ["NPUGRAPH_EX_CPU_RELEASE"] = self.old


class Base(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()
        self.before = set(npugraph_ex_cpu.graphs())

    def graphs(self):
        return new_graphs(self.before)


class RegistrationTest(Base):
    def test_backend_registered_and_import_idempotent(self):
        self.assertIn("npugraph_ex", torch._dynamo.list_backends(exclude_tags=()))
        self.assertTrue(npugraph_ex_cpu.register())
        self.assertTrue(npugraph_ex_cpu.register())
        importlib.import_module("npugraph_ex_cpu")
        from torch._dynamo.backends.registry import lookup_backend
        self.assertIs(lookup_backend("npugraph_ex"), npugraph_ex_cpu.npugraph_ex_backend)

    def test_ops_schemas_in_both_namespaces(self):
        for ns in ("air", "npugraph_ex"):
            ops = getattr(torch.ops, ns)
            self.assertEqual(str(ops.scope_enter.default._schema),
                             f"{ns}::scope_enter(str[] keys, str[] values, bool need_execute=False) -> NoneType")
            self.assertEqual(str(ops.scope_exit.default._schema),
                             f"{ns}::scope_exit(bool need_execute=False) -> NoneType")
            self.assertEqual(str(ops.record.default._schema),
                             f"{ns}::record(*, Device? device=None) -> Tensor")
            self.assertEqual(str(ops.wait.default._schema), f"{ns}::wait(Tensor[] x) -> ()")

    def test_dead_code_elimination_keeps_side_effectful_ops(self):
        for ns in ("air", "npugraph_ex"):
            ops = getattr(torch.ops, ns)
            g = torch.fx.Graph()
            x = g.placeholder("x")
            g.call_function(ops.scope_enter.default, (["_user_stream_label"], ["stream_1"]))
            y = g.call_function(torch.ops.aten.abs.default, (x,))
            rec = g.call_function(ops.record.default, ())
            g.call_function(ops.scope_exit.default, ())
            g.call_function(ops.wait.default, ([rec],))
            g.call_function(ops.record.default, ())  # unused: not side-effectful, removed
            g.call_function(torch.ops.aten.neg.default, (x,))  # unused pure op, removed
            g.output(y)
            g.eliminate_dead_code()
            kept = [str(n.target) for n in g.nodes if n.op == "call_function"]
            self.assertEqual(kept, [f"{ns}.scope_enter.default", "aten.abs.default", f"{ns}.record.default",
                                    f"{ns}.scope_exit.default", f"{ns}.wait.default"])

    def test_scope_need_execute_pushes_and_pops(self):
        torch.ops.air.scope_enter(["_user_stream_label"], ["s1"], True)
        self.assertEqual(npugraph_ex_cpu.scope_stack()[-1], {"_user_stream_label": "s1"})
        torch.ops.air.scope_exit(True)
        self.assertEqual(npugraph_ex_cpu.scope_stack(), [])
        torch.ops.air.scope_enter(["k"], ["v"])  # need_execute=False: no effect
        self.assertEqual(npugraph_ex_cpu.scope_stack(), [])
        self.assertEqual(torch.ops.air.record().numel(), 0)
        self.assertIsNone(torch.ops.air.wait([torch.empty(0)]))

    def test_markers_survive_compilation_in_a_custom_pass(self):
        def pre(gm, example_inputs, config):
            g = gm.graph
            for n in list(g.nodes):
                if n.op == "call_function" and n.target == torch.ops.aten.mm.default:
                    with g.inserting_before(n):
                        g.call_function(torch.ops.air.scope_enter.default, (["_user_stream_label"], ["stream_1"]))
                    with g.inserting_after(n):
                        g.call_function(torch.ops.air.scope_exit.default, ())
        f = compiled(lambda a, b: (a @ b).abs() + 1, options={"post_grad_custom_pre_pass": pre})
        a, b = torch.randn(3, 3), torch.randn(3, 3)
        self.assertTrue(torch.allclose(f(a, b), (a @ b).abs() + 1))
        code = self.graphs()[0].graph_module.code
        self.assertIn("air.scope_enter", code)
        self.assertIn("air.scope_exit", code)


class OptionsTest(Base):
    def test_invalid_option_message_26(self):
        with WithRelease("26.0.0"):
            with self.assertRaises(ValueError) as cm:
                _options.process_options({"capture_limit": 3, "force_recapture": True})
        allowed = sorted(_options.TABLES["26.0.0"])
        self.assertEqual(str(cm.exception), f"Invalid option 'force_recapture', allowed options: {allowed}")
        self.assertIn("deadlock_check", allowed)
        self.assertNotIn("graph_dump_type", allowed)

    def test_release_tables(self):
        with WithRelease("7.3.0"):
            _options.process_options({"graph_dump_type": "py"})
            with self.assertRaisesRegex(ValueError, r"^Invalid option 'deadlock_check', allowed options: \["):
                _options.process_options({"deadlock_check": True})
        with WithRelease("26.0.0"):
            _options.process_options({"deadlock_check": True, "remove_cat_ops": False})
            with self.assertRaisesRegex(ValueError, "Invalid option 'graph_dump_type'"):
                _options.process_options({"graph_dump_type": "py"})

    def test_checked_at_first_call_not_at_compile(self):
        f = compiled(lambda x: x + 1, options={"capture_limt": 2})
        with self.assertRaises(Exception) as cm:
            f(torch.ones(2))
        self.assertIn("Invalid option 'capture_limt', allowed options: [", str(cm.exception))

    def test_values_checked(self):
        with self.assertRaisesRegex(ValueError, "Please set integer type"):
            _options.process_options({"capture_limit": "4"})
        with self.assertRaisesRegex(ValueError, r"Please set value in \[1, 9223372036854775807\], 0 is out of range"):
            _options.process_options({"capture_limit": 0})
        with self.assertRaisesRegex(ValueError, "not in optional list"):
            _options.process_options({"clone_input": "yes"})
        with self.assertRaisesRegex(ValueError, "not in optional list"):
            _options.process_options({"inplace_pass": "no"})
        with self.assertRaisesRegex(TypeError, "Callable"):
            _options.process_options({"post_grad_custom_pre_pass": 3})
        with self.assertRaisesRegex(TypeError, "Invalid graph pool handle type"):
            _options.process_options({"use_graph_pool": 7})
        opts = _options.process_options({"use_graph_pool": npugraph_ex_cpu.graph_pool_handle(), "clone_input": 0})
        self.assertEqual(opts.clone_input, 0)
        self.assertEqual(opts.capture_limit, 64)

    def test_mode_ignored(self):
        f = compiled(lambda x: x * 3, mode="reduce-overhead")
        self.assertTrue(torch.equal(f(torch.ones(2)), torch.full((2,), 3.0)))


class CaptureReplayTest(Base):
    def test_outputs_are_static_and_overwritten(self):
        f = compiled(lambda x: x * 2, dynamic=False)
        y1 = f(torch.ones(3))
        y2 = f(torch.full((3,), 5.0))
        self.assertTrue(torch.equal(y2, torch.full((3,), 10.0)))
        self.assertEqual(y1.data_ptr(), y2.data_ptr())
        self.assertTrue(torch.equal(y1, torch.full((3,), 10.0)), "a kept output is overwritten by the next replay")
        (g,) = self.graphs()
        self.assertEqual(counters["npugraph_ex"]["captured_" + g.name], 1)
        self.assertEqual(g.replays, 2)

    def test_clone_output_ignored_with_one_graph_key(self):
        f = compiled(lambda x: x * 2, dynamic=False, options={"clone_output": True})
        y1 = f(torch.ones(3))
        f(torch.full((3,), 5.0))
        self.assertTrue(torch.equal(y1, torch.full((3,), 10.0)))

    def test_clone_output_with_several_graph_keys(self):
        for clone in (True, False):
            torch._dynamo.reset()
            f = compiled(lambda x: x * 2, dynamic=True, options={"clone_output": clone})
            f(torch.ones(2))
            f(torch.ones(3))
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                y = f(torch.ones(3))
                f(torch.full((3,), 4.0))
            self.assertEqual(torch.equal(y, torch.full((3,), 2.0)), clone)
            self.assertEqual(any("fixed memory" in str(x.message) for x in w), not clone)

    def test_clone_input_true_private_buffer(self):
        f = compiled(lambda x: x + 1, dynamic=False, options={"clone_input": True})
        a, b = torch.zeros(4), torch.full((4,), 7.0)
        f(a)
        out = f(b)
        self.assertTrue(torch.equal(out, torch.full((4,), 8.0)))
        self.assertTrue(torch.equal(a, torch.zeros(4)), "the capture-call tensor is not the static buffer")
        (g,) = self.graphs()
        buf = next(iter(g.graphs.values())).static_inputs[0]
        self.assertNotEqual(buf.data_ptr(), a.data_ptr())
        self.assertTrue(torch.equal(buf, b), "the later input was copied into the static buffer")

    def test_clone_input_false_copies_into_callers_tensor(self):
        f = compiled(lambda x: x + 1, dynamic=False, options={"clone_input": False})
        a, b = torch.zeros(4), torch.full((4,), 7.0)
        f(a)
        out = f(b)
        self.assertTrue(torch.equal(out, torch.full((4,), 8.0)), "replay result right either way")
        self.assertTrue(torch.equal(a, b), "with clone_input=False the capture-call tensor is the static buffer")

    def test_capture_limit_falls_back_for_all_later_calls(self):
        def fn(x):
            return x * 2 + 1
        f = compiled(fn, dynamic=True, options={"capture_limit": 2})
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for n in (2, 3):
                f(torch.ones(n))
            self.assertFalse(any("static_capture_size_limit" in str(x.message) for x in w))
            (g,) = self.graphs()
            self.assertEqual(counters["npugraph_ex"]["captured_" + g.name], 2)
            self.assertTrue(torch.equal(f(torch.ones(4)), fn(torch.ones(4))))
            msgs = [str(x.message) for x in w if "static_capture_size_limit" in str(x.message)]
        self.assertEqual(len(msgs), 1)
        self.assertTrue(msgs[0].startswith(f"The static_capture_size_limit reached when capturing fx_graph {g.name} "
                                           "with graph key "), msgs[0])
        self.assertIn("we will fall back to eager for all subsequent executions.", msgs[0])
        self.assertTrue(g.fallback_to_eager)
        self.assertNotIn("captured_" + g.name, counters["npugraph_ex"])
        replays = g.replays
        for n in (2, 3, 4):  # shapes captured before fall back too
            self.assertTrue(torch.equal(f(torch.ones(n)), fn(torch.ones(n))))
        self.assertEqual(g.replays, replays)
        self.assertEqual(g.eager_runs, 4)

    def test_force_eager(self):
        f = compiled(lambda x: torch.relu(x * 2) + 1, options={"force_eager": True})
        x = torch.randn(5)
        self.assertTrue(torch.allclose(f(x), torch.relu(x * 2) + 1))
        f(torch.randn(5))
        (g,) = self.graphs()
        self.assertEqual((g.replays, g.eager_runs), (0, 2))
        self.assertNotIn("captured_" + g.name, counters["npugraph_ex"])
        self.assertIn("eliminate_dead_code", g.graph_module.meta["npugraph_ex_passes"])

    def test_parameters_used_in_place(self):
        m = torch.nn.Linear(3, 3)
        f = compiled(m)
        x = torch.randn(2, 3)
        with torch.no_grad():
            f(x)
            m.weight.mul_(0)
            m.bias.fill_(1)
            self.assertTrue(torch.equal(f(x), torch.ones(2, 3)))

    def test_mutated_input_in_place_and_recapture(self):
        def step(cache, x):
            cache.add_(x)
            return cache * 1.0
        f = compiled(step, dynamic=False)
        cache = torch.zeros(3)
        f(cache, torch.ones(3))
        f(cache, torch.ones(3))
        self.assertTrue(torch.equal(cache, torch.full((3,), 2.0)), "the caller's tensor is mutated")
        (g,) = self.graphs()
        self.assertNotIn("copy_", g.graph_module.code)
        self.assertIn("add_", g.graph_module.code)
        other = torch.zeros(3)
        f(other, torch.ones(3))
        self.assertTrue(torch.equal(other, torch.ones(3)))
        self.assertEqual(counters["npugraph_ex"]["recapture_due_to_mutated_input_change_" + g.name], 1)

    def test_input_inplace_pass_off_keeps_copy(self):
        def step(cache, x):
            cache.add_(x)
            return cache * 1.0
        f = compiled(step, dynamic=False, options={"input_inplace_pass": False})
        cache = torch.zeros(3)
        f(cache, torch.ones(3))
        self.assertTrue(torch.equal(cache, torch.ones(3)))
        (g,) = self.graphs()
        self.assertIn("copy_", g.graph_module.code)


class PassesTest(Base):
    def test_pass_order_and_custom_pass_arguments(self):
        seen = []

        def pre(gm, example_inputs, config):
            seen.append(("pre", list(gm.meta.get("npugraph_ex_passes", [])), len(example_inputs), config.capture_limit))

        def post(gm, example_inputs, config):
            seen.append(("post", list(gm.meta.get("npugraph_ex_passes", []))))
        f = compiled(lambda x: x.view(-1) + 1, options={"post_grad_custom_pre_pass": pre,
                                                        "post_grad_custom_post_pass": post, "capture_limit": 5})
        f(torch.ones(2, 2))
        self.assertEqual(seen[0], ("pre", [], 1, 5))
        self.assertEqual(seen[1], ("post", ["post_grad_custom_pre_pass", "remove_noop_ops", "view_to_reshape"]))
        (g,) = self.graphs()
        self.assertEqual(g.graph_module.meta["npugraph_ex_passes"][-3:],
                         ["eliminate_dead_code", "inplace_pass", "input_inplace_pass"])

    def test_view_to_reshape(self):
        f = compiled(lambda x: x.view(4, 2) * 2, options={"remove_noop_ops": False})
        f(torch.ones(2, 4))
        (g,) = self.graphs()
        self.assertIn("aten.reshape.default", g.graph_module.code)
        self.assertNotIn("aten.view.default", g.graph_module.code)

    def test_remove_noop_ops(self):
        def fn(x):
            return x.repeat(1, 1) * 2
        for on in (True, False):
            torch._dynamo.reset()
            before = set(npugraph_ex_cpu.graphs())
            x = torch.randn(2, 2)
            self.assertTrue(torch.equal(compiled(fn, options={"remove_noop_ops": on})(x), fn(x)))
            (g,) = new_graphs(before)
            self.assertEqual("repeat" in g.graph_module.code, not on, g.graph_module.code)

    def test_inplace_pass(self):
        def fn(x):
            y = x * 2
            return torch.relu(y) + 1
        for on in (True, False):
            torch._dynamo.reset()
            before = set(npugraph_ex_cpu.graphs())
            f = compiled(fn, options={"inplace_pass": on})
            x = torch.randn(6)
            self.assertTrue(torch.allclose(f(x), fn(x)))
            (g,) = new_graphs(before)
            self.assertEqual("relu_" in g.graph_module.code or "add_" in g.graph_module.code, on,
                             g.graph_module.code)

    def test_compile_fx_in_custom_backend(self):
        from torch._functorch.aot_autograd import aot_module_simplified

        def backend(gm, example_inputs):
            return aot_module_simplified(
                gm, example_inputs,
                fw_compiler=lambda g, i: npugraph_ex_cpu.compile_fx(g, i, {"clone_input": False}))
        f = torch.compile(lambda x: x - 1, backend=backend)
        a = torch.ones(2)
        f(a)
        self.assertTrue(torch.equal(f(torch.full((2,), 3.0)), torch.full((2,), 2.0)))
        self.assertTrue(torch.equal(a, torch.full((2,), 3.0)), "clone_input=False reached the runtime")
        with self.assertRaisesRegex(ValueError, "Invalid option 'x'"):
            npugraph_ex_cpu.compile_fx(None, [], {"x": 1})


if __name__ == "__main__":
    unittest.main()
