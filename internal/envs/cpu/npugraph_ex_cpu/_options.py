"""torch.compile(..., options={...}) of the npugraph_ex backend: names,
defaults, validation.

Sources read (never copied):
- 26.0.0: npugraph_ex/npugraph_ex/configs/npugraphex_config.py (the option
  table, its mapping to CompilerConfig fields, the inverted booleans, the
  "Invalid option" check in _process_kwargs_options),
  npugraph_ex/npugraph_ex/configs/_option_base.py (OptionValue,
  IntRangeValue, CallableValue: how a value is checked when assigned),
  npugraph_ex/npugraph_ex/configs/debug_config.py (capture limit range).
- 7.3.0: python/torchair/configs/npugraphex_config.py (its smaller table, with
  graph_dump_type / graph_dump_path, without the 26.0.0 additions).
"""

import os

RELEASES = ("7.3.0", "26.0.0")
DEFAULT_RELEASE = "26.0.0"
INT64_MAX = 9223372036854775807

# option -> (default, kind). Kinds: "bool" (OptionValue [True, False]),
# "limit" (IntRangeValue [1, INT64_MAX]), "callable" (CallableValue),
# "any" (no check on assignment in the release), "dict", "str".
_COMMON = {
    "static_kernel_compile": (False, "bool"),
    "inplace_pass": (True, "bool"),
    "input_inplace_pass": (True, "bool"),
    "remove_noop_ops": (True, "bool"),
    "force_eager": (False, "bool"),
    "pattern_fusion_pass": (True, "bool"),
    "clone_input": (True, "bool"),
    "frozen_parameter": (False, "bool"),
    "post_grad_custom_pre_pass": (None, "callable"),
    "post_grad_custom_post_pass": (None, "callable"),
    "use_graph_pool": (None, "any"),
    "reuse_graph_pool_in_same_fx": (True, "bool"),
    "capture_limit": (64, "limit"),
    "clone_output": (False, "bool"),
}

_ONLY_7_3_0 = {
    "graph_dump_type": (None, "any"),
    "graph_dump_path": (None, "any"),
}

_ONLY_26_0_0 = {
    "_vllm_aclnn_static_kernel_sym_index": (0, "any"),
    "_vllm_aclnn_static_kernel_sym_range": (None, "any"),
    "super_kernel_optimize": (False, "bool"),
    "super_kernel_optimize_options": (None, "dict"),
    "super_kernel_debug_options": (None, "dict"),
    "remove_cat_ops": (True, "bool"),
    "dump_tensor_data": (False, "bool"),
    "data_dump_stage": ("optimized", "stage"),
    "data_dump_dir": ("./", "str"),
    "deadlock_check": (False, "bool"),
}

TABLES = {
    "7.3.0": {**_COMMON, **_ONLY_7_3_0},
    "26.0.0": {**_COMMON, **_ONLY_26_0_0},
}

# Options whose CompilerConfig field is the negation ("disable_..."): the
# release inverts the value before assigning it, so a wrong value is reported
# as the inverted one would be.
_INVERTED = ("inplace_pass", "input_inplace_pass", "reuse_graph_pool_in_same_fx")


def release():
    """The TorchAir release the stand-in behaves as: NPUGRAPH_EX_CPU_RELEASE
    (7.3.0 or 26.0.0), default 26.0.0."""
    r = os.environ.get("NPUGRAPH_EX_CPU_RELEASE", DEFAULT_RELEASE)
    if r not in RELEASES:
        raise ValueError(f"NPUGRAPH_EX_CPU_RELEASE={r!r}: the stand-in knows the releases {list(RELEASES)}")
    return r


def _invert(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, int) and v in (0, 1):
        return 1 - v
    return v


def _check_value(kind, value):
    """Raises as the release's config field would when assigned value."""
    if kind == "bool":
        if value not in [True, False]:
            raise ValueError(f"Value {value!r} (type: {type(value)}) not in optional list "
                             f"[True, False] (type: {bool}).")
    elif kind == "limit":
        if not isinstance(value, int):
            raise ValueError(f"Please set integer type, but got {type(value)}")
        if value < 1 or value > INT64_MAX:
            raise ValueError(f"Please set value in [1, {INT64_MAX}], {value} is out of range.")
    elif kind == "callable":
        if value is not None and not callable(value):
            raise TypeError(f"value must be Callable or None, got {type(value)}")
    elif kind == "dict":
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"value must be dict or None, got {type(value)}")
    elif kind == "str":
        if value is not None and not isinstance(value, str):
            raise TypeError(f"value must be str or None, got {type(value)}")
    elif kind == "stage":
        if value not in ["optimized", "original"]:
            raise ValueError(f"Value {value!r} (type: {type(value)}) not in optional list "
                             f"['optimized', 'original'] (type: {str}).")


class Options:
    """The effective options of one compilation (every known option set, the
    defaults where the caller gave none). Passed as the third argument of
    post_grad_custom_pre_pass / post_grad_custom_post_pass where the release
    passes its CompilerConfig."""

    def __init__(self, rel, values):
        self.release = rel
        self._values = dict(values)
        for k, v in values.items():
            setattr(self, k, v)

    def as_dict(self):
        return dict(self._values)

    def __repr__(self):
        return f"npugraph_ex_cpu.Options(release={self.release!r}, {self._values!r})"


def process_options(options, rel=None):
    """Validates options as the release does when the backend is called
    (that is, at the first execution, when Dynamo compiles, not at
    torch.compile), in the caller's order: the first unknown name raises
    ValueError("Invalid option '<k>', allowed options: [<sorted names>]")."""
    rel = rel or release()
    table = TABLES[rel]
    values = {k: d for k, (d, _) in table.items()}
    for k in (options or {}):
        if k not in table:
            raise ValueError(f"Invalid option '{k}', allowed options: {sorted(table)}")
        v = options[k]
        _check_value(table[k][1], _invert(v) if k in _INVERTED else v)
        values[k] = v
    pool = values.get("use_graph_pool")
    if pool is not None:
        # acl_graph.py (26.0.0, 7.3.0), AclGraphCacheInfo.__post_init__: a
        # pool handle is a pair of ints of which one is 0.
        if not (isinstance(pool, tuple) and len(pool) == 2 and all(isinstance(p, int) for p in pool)
                and pool[0] * pool[1] == 0):
            raise TypeError(f"Invalid graph pool handle type, got value={pool}, type={type(pool).__name__}")
    return Options(rel, values)
