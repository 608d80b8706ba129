"""Assembles the public namespaces: the functions the registry generates
(from each op's api_names), then the hand-written wrappers, which win where
both exist."""

import sys

from treadle.autodiff import vectorized_mapping
from treadle.framework import op_def_library
from treadle.ops import (array_extra_ops, array_ops, control_flow_ops, debugging_ops, einsum_ops, functional_ops,
                         linalg_ops, logging_ops, math_extra_ops, math_ops, nn_ops, random_ops, script_ops,
                         segment_ops, sort_ops, stateless_random_ops)

_NAMESPACES = ("math", "nn", "bitwise", "random", "linalg", "debugging")


def install_api(top):
    modules = {"": top}
    for ns in _NAMESPACES:
        modules[ns] = vars(sys.modules[f"treadle.{ns}"])
    for dotted, fn in op_def_library.api_functions():
        ns, _, short = dotted.rpartition(".")
        modules[ns].setdefault(short, fn)
    for module in (math_ops, array_ops, nn_ops, random_ops, control_flow_ops, logging_ops, script_ops,
                   array_extra_ops, math_extra_ops, linalg_ops, debugging_ops, functional_ops, sort_ops,
                   stateless_random_ops, einsum_ops, segment_ops, vectorized_mapping):
        for ns, names in getattr(module, "PUBLIC", {}).items():
            for short in names:
                modules[ns][short] = getattr(module, short if short in vars(module) else "_" + short)
