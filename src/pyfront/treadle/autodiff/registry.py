"""The table of gradient rules: one per op type, written once.

A rule is `rule(op, *output_grads) -> input grads`: `op` has `.type`,
`.inputs`, `.outputs` and attributes read with `get_attr(op, name)`; it is a
graph Operation, or an eager op recorded by a GradientTape. An output grad is
None where nothing flows back into that output. The rule returns one value per
input (None where the input gets no gradient) built with ordinary op calls,
so the same rule adds graph nodes while tracing and runs eagerly otherwise."""

import threading

from treadle.framework import dtypes
from treadle.framework.op_def_library import SIGNATURES

_RULES = {}
_NOT_DIFFERENTIABLE = set()
_DEFAULTS = {}  # op type -> {attr name: default}

# Gradients flow only through these dtypes: floats, variable handles (whose
# gradient is that of the variable's value) and tensor lists (whose gradient
# is a list of gradients). Integer, bool and string paths give None.
DIFFERENTIABLE_DTYPES = frozenset([dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.resource,
                                   dtypes.variant])


class RegisterGradient:
    """Decorator: `@RegisterGradient("AddV2")` registers the rule for an op type."""

    def __init__(self, *op_types):
        self._op_types = op_types

    def __call__(self, fn):
        for op_type in self._op_types:
            if op_type in _RULES or op_type in _NOT_DIFFERENTIABLE:
                raise KeyError(f"a gradient for {op_type} is already registered")
            _RULES[op_type] = fn
        return fn


def NotDifferentiable(*op_types):  # noqa: N802 (TensorFlow's name)
    """Declares op types that no gradient flows through (comparisons, shapes,
    integer-only ops, random ops, variable writes)."""
    for op_type in op_types:
        if op_type in _RULES or op_type in _NOT_DIFFERENTIABLE:
            raise KeyError(f"a gradient for {op_type} is already registered")
        _NOT_DIFFERENTIABLE.add(op_type)


def get_gradient_function(op_type):
    """The rule for `op_type`; None for a non-differentiable op; LookupError
    for an op nobody declared either way."""
    rule = _RULES.get(op_type)
    if rule is not None:
        return rule
    if op_type in _NOT_DIFFERENTIABLE:
        return None
    raise LookupError(f"No gradient defined for operation of type '{op_type}'")


def registered_rules():
    return dict(_RULES)


def non_differentiable_ops():
    return set(_NOT_DIFFERENTIABLE)


def get_attr(op, name):
    """Attribute `name` of `op`, or the registry's default when the call left it out."""
    attrs = op.attrs
    if attrs and name in attrs:
        return attrs[name]
    defaults = _DEFAULTS.get(op.type)
    if defaults is None:
        defaults = _DEFAULTS[op.type] = {a["name"]: a["default"] for a in SIGNATURES[op.type].attrs
                                         if a["has_default"]}
    try:
        return defaults[name]
    except KeyError:
        raise KeyError(f"{op.type} has no attribute '{name}'") from None


class _Wanted(threading.local):
    value = None


_wanted = _Wanted()


def input_wanted(i):
    """Whether the rule being run must produce a gradient for input i (the
    backward pass leaves out inputs no source depends on, so rules can skip
    work such as the gradient of a matmul with respect to the data)."""
    w = _wanted.value
    return w is None or w[i]


def set_wanted(flags):
    _wanted.value = flags


def is_differentiable(t):
    return t.dtype in DIFFERENTIABLE_DTYPES
