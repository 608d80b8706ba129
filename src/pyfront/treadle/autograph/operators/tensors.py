"""What the runtime operators need to know about values: whether one stages
graph control flow, and conditions as scalar bool tensors."""

from treadle.framework import dtypes
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.ops import math_ops

_not_equal = math_ops.OPERATOR_FUNCTIONS["not_equal"]


def is_symbolic(value):
    """A tensor of a graph being traced: control flow on it must be staged.
    (An eager tensor has a value, so Python control flow can use it.)"""
    return isinstance(value, Tensor) and type(value) is not EagerTensor


def as_condition(value, what):
    """A scalar bool tensor for a condition; numbers are true when non-zero,
    as in Python."""
    t = convert_to_tensor(value)
    if t.shape.rank not in (0, None):
        raise ValueError(f"the condition of {what} must be a scalar, but it is a tensor of shape {t.shape}; "
                         "reduce it first (e.g. with td.reduce_all or td.reduce_any)")
    if t.dtype != dtypes.bool:
        if t.dtype in (dtypes.string, dtypes.resource, dtypes.variant):
            raise TypeError(f"the condition of {what} must be a bool or number, got a {t.dtype.name} tensor")
        t = _not_equal(t, convert_to_tensor(0, dtype=t.dtype))
    return t
