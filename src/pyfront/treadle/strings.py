"""td.strings: TensorFlow's string joins and number formatting (C++ kernels
StringJoin and ReduceJoin in string_join_ops.cc, AsString in
string_format_ops.cc)."""

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor


def join(inputs, separator="", name=None):
    """The strings of `inputs` (a list of string tensors, each a scalar or of
    one common shape) joined elementwise, with `separator` between them."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"td.strings.join expects a list of string tensors, got {type(inputs).__name__}")
    if not inputs:
        raise ValueError("td.strings.join needs at least one input")
    tensors = [convert_to_tensor(t, dtype=dtypes.string) for t in inputs]
    return execute("StringJoin", tensors, {"separator": str(separator)}, name=name)[0]


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """The strings of `inputs` joined along `axis` (an int or a list, the
    first listed varying fastest; every axis, in row-major order, when None),
    with `separator` between them."""
    t = convert_to_tensor(inputs, dtype=dtypes.string)
    if axis is None:
        rank = t.shape.rank
        if rank is None:
            raise ValueError("td.strings.reduce_join: axis=None needs a known rank")
        axes = list(range(rank - 1, -1, -1))
    else:
        axes = axis
    axes = convert_to_tensor(axes, dtype=dtypes.int32)
    return execute("ReduceJoin", [t, axes], {"keep_dims": bool(keepdims), "separator": str(separator)},
                   name=name)[0]


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """Each element as a string: floats as printf's %f (%e with scientific,
    %g with shortest; `precision` digits), integers in decimal, bools as
    true/false; padded to `width` with `fill` (one of " ", "0", "+", "-",
    "#", a printf flag) as TensorFlow does."""
    t = convert_to_tensor(input)
    return execute("AsString", [t], {"precision": int(precision), "scientific": bool(scientific),
                                     "shortest": bool(shortest), "width": int(width), "fill": str(fill)},
                   name=name)[0]


__all__ = ["as_string", "join", "reduce_join"]


def __dir__():
    return sorted(__all__)
