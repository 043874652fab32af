# npugrade envprobe: prints one line "NPUGRADE_ENVPROBE_JSON:<json>" describing
# the Python side of a runner. Every step is guarded: a runner may have CPU
# torch 1.13 (no torch._dynamo), no torch_npu, or no NPU at all, and the
# probe must still report what it found. Anything imported modules print goes
# to stderr so that stdout carries only the result line.
# Flags: --smoke runs the npugraph_ex smoke test when an NPU is present;
# --cpu-only skips torch_npu and every NPU query.
import contextlib
import json
import platform
import sys


def describe(e):
    return "%s: %s" % (type(e).__name__, e)


def probe(out, smoke, cpu_only):
    errors = out["errors"]
    try:
        import torch
        out["torch"] = str(torch.__version__)
    except Exception as e:
        errors["torch"] = describe(e)
        return
    torch_npu = None
    if not cpu_only:
        try:
            import torch_npu
            out["torch_npu"] = str(torch_npu.__version__)
        except Exception as e:
            errors["torch_npu"] = describe(e)
        try:
            import torchair  # noqa: F401
            out["torchair"] = True
        except Exception as e:
            out["torchair"] = False
            errors["torchair"] = describe(e)
        try:
            import npugraph_ex  # noqa: F401  (separate package from 26.0.0)
            out["npugraph_ex_package"] = True
        except Exception:
            out["npugraph_ex_package"] = False
    try:
        # The cpu grading environment's stand-in of the npugraph_ex backend,
        # which its kernels import at start (internal/envs/cpu/README.md).
        import npugraph_ex_cpu  # noqa: F401
        out["npugraph_ex_stand_in"] = True
    except Exception:
        pass
    try:
        import torch._dynamo
        try:
            backends = torch._dynamo.list_backends(exclude_tags=())
        except TypeError:
            backends = torch._dynamo.list_backends()
        out["dynamo"] = True
        out["npugraph_ex_backend"] = "npugraph_ex" in backends
    except Exception as e:
        out["dynamo"] = False
        errors["dynamo"] = describe(e)
    if torch_npu is None:
        return
    try:
        out["cann"] = str(torch_npu.npu.utils.get_cann_version(module="CANN"))
    except Exception as e:
        errors["cann"] = describe(e)
        cann = getattr(getattr(torch, "version", None), "cann", None)
        if cann:
            out["cann"] = str(cann)
    try:
        out["npu_available"] = bool(torch.npu.is_available())
    except Exception as e:
        out["npu_available"] = False
        errors["npu_available"] = describe(e)
    if not out["npu_available"]:
        return
    try:
        out["device_count"] = int(torch.npu.device_count())
        if out["device_count"] > 0:
            out["device_name"] = str(torch.npu.get_device_name(0))
    except Exception as e:
        errors["device"] = describe(e)
    try:
        out["soc_version"] = int(torch_npu.npu.get_soc_version())
    except Exception as e:
        errors["soc_version"] = describe(e)
    if smoke and out.get("device_count", 0) > 0:
        try:
            class Add(torch.nn.Module):
                def forward(self, x, y):
                    return x + y

            model = Add().npu()
            x = torch.randn(4, 4).npu()
            y = torch.randn(4, 4).npu()
            eager = model(x, y)
            compiled = torch.compile(model, backend="npugraph_ex", fullgraph=True, dynamic=False)
            first = compiled(x, y)   # capture
            second = compiled(x, y)  # replay
            torch.npu.synchronize()
            out["smoke_ok"] = bool(torch.equal(eager.cpu(), first.cpu()) and torch.equal(eager.cpu(), second.cpu()))
        except Exception as e:
            out["smoke_ok"] = False
            errors["smoke"] = describe(e)


def main():
    args = sys.argv[1:]
    out = {
        "sys_version": sys.version,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "errors": {},
    }
    with contextlib.redirect_stdout(sys.stderr):
        try:
            probe(out, "--smoke" in args, "--cpu-only" in args)
        except BaseException as e:  # never lose the partial result
            out["errors"]["probe"] = describe(e)
    sys.stdout.write("\nNPUGRADE_ENVPROBE_JSON:" + json.dumps(out) + "\n")
    sys.stdout.flush()


main()
