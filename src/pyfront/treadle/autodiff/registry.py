"""The table of gradient rules: one per op type, written once.

A rule is `rule(op, *output_grads) -> input grads`: `op` has `.type`,
`.inputs`, `.outputs` and attributes read with `get_attr(op, name)`; it is a
graph Operation, or an eager op recorded by a GradientTape. An output grad is
None where nothing flows back into that output. The rule returns one value per
input (None where the input gets no gradient) built with ordinary op calls,
so the same rule adds graph nodes while tracing and runs eagerly otherwise.

A rule that declares a keyword-only parameter `wanted` is also told which
inputs need a gradient (one bool per input: the backward pass leaves out
inputs no source depends on), so it can skip that work, such as a matmul's
gradient with respect to its data."""

import inspect

from treadle.framework import dtypes
from treadle.framework.op_def_library import SIGNATURES

_RULES = {}
_TAKES_WANTED = {}  # rule -> whether it declares the keyword-only parameter `wanted`
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


def _declares_wanted(fn):
    try:
        param = inspect.signature(fn).parameters.get("wanted")
    except (TypeError, ValueError):  # a callable without a signature Python can read
        return False
    return param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY


def call_rule(rule, op, output_grads, wanted):
    """Runs gradient rule `rule` of `op`; `wanted[i]` says whether input i
    needs a gradient (given to the rules that declare `wanted`)."""
    takes_wanted = _TAKES_WANTED.get(rule)
    if takes_wanted is None:
        takes_wanted = _TAKES_WANTED[rule] = _declares_wanted(rule)
    if takes_wanted:
        return rule(op, *output_grads, wanted=wanted)
    return rule(op, *output_grads)


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


def is_differentiable(t):
    return t.dtype in DIFFERENTIABLE_DTYPES
