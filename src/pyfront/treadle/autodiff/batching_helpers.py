"""Helpers the batching rules share: axis shifting, broadcasting batched
operands against unbatched ones, and the common rule shapes (elementwise,
same op on the batched input, axis attribute or axis input shifted by one)."""

import numpy as np

from treadle.autodiff import helpers
from treadle.autodiff.batching_registry import NotBatchable
from treadle.autodiff.helpers import ints, run, run_all, scalar
from treadle.framework import dtypes
from treadle.framework.tensor import convert_to_tensor


def per_example_rank(op, i):
    """The rank of op's input i for one example (NotBatchable when unknown)."""
    rank = op.inputs[i].shape.rank
    if rank is None:
        raise NotBatchable(f"the rank of input {i} is unknown")
    return rank


def out_rank(op, i=0):
    rank = op.outputs[i].shape.rank
    if rank is None:
        raise NotBatchable(f"the rank of output {i} is unknown")
    return rank


def expand_to_rank(x, have, want):
    """Batched x (per-example rank `have`) with size-1 axes after the batch
    axis, to per-example rank `want`: it then broadcasts as its example did."""
    if want <= have:
        return x
    s = helpers.static_shape(x)
    if helpers.fully_known(s):
        return helpers.reshape(x, ints((s[0],) + (1,) * (want - have) + s[1:]))
    for _ in range(want - have):
        x = run("ExpandDims", [x, scalar(1, dtypes.int32)])
    return x


def broadcastable(op, inputs, batched):
    """The inputs of an elementwise op, batched ones aligned so that they
    broadcast against the unbatched ones as each example did."""
    ranks = [per_example_rank(op, i) for i in range(len(inputs))]
    top = max(ranks)
    return [expand_to_rank(v, r, top) if b else v for v, r, b in zip(inputs, ranks, batched)]


def elementwise(ctx, op, inputs, batched):
    """Rule of ops that broadcast their operands elementwise."""
    return reemit(op, broadcastable(op, inputs, batched))


def same_shapes(ctx, op, inputs, batched):
    """Rule of ops whose operands have one shape (no broadcasting): the
    unbatched ones are repeated for every example."""
    return reemit(op, ctx.batched_all(inputs, batched))


def axis_input_shifted(ctx, op, inputs, batched):
    """Rule of ops reducing input 0 over the axes input 1 gives (the same for
    every example): the axes shifted past the batch axis."""
    unbatched_only(batched, [1], "the axis")
    return reemit(op, [inputs[0], shift_axis_tensor(inputs[1], batched[1])])


def reemit(op, inputs):
    """`op` with its attributes on new inputs."""
    return list(run_all(op.type, list(inputs), dict(op.attrs)))


def same_op(ctx, op, inputs, batched):
    """Rule of ops whose single input may gain a leading axis unchanged
    (unary elementwise ops, ops on the last axis)."""
    return reemit(op, inputs)


def constant_int(t):
    value = helpers.const_value(t)
    if value is None:
        return None
    return np.asarray(value).astype(np.int64)


def shift_axis_value(axis):
    """A per-example axis (non-negative, or negative counting from the end) as an axis of the batch."""
    return axis + 1 if axis >= 0 else axis


def shift_axis_tensor(axis, batched):
    """An axis input (scalar or vector, constant or not) moved past the batch axis."""
    if batched:
        raise NotBatchable("the axis: not the same for every example")
    value = constant_int(axis)
    if value is not None:
        return convert_to_tensor(np.where(value >= 0, value + 1, value), dtype=axis.dtype)
    zero = scalar(0, axis.dtype)
    return run("SelectV2", [run("GreaterEqual", [axis, zero]), run("AddV2", [axis, scalar(1, axis.dtype)]), axis])


def prepend(vector, first):
    """[first] + vector, for int vectors (shapes, begins, multiples); a
    constant when both are known."""
    value = constant_int(vector)
    if value is not None and isinstance(first, int):
        return convert_to_tensor(np.concatenate([[first], value]).astype(np.int64), dtype=vector.dtype)
    first = helpers.cast(first, vector.dtype) if hasattr(first, "dtype") else scalar(first, vector.dtype)
    return run("ConcatV2", [run("Reshape", [first, ints([1])]), vector, scalar(0, dtypes.int32)])


def unbatched_only(batched, which, what):
    """NotBatchable when any input listed in `which` is batched."""
    for i in which:
        if batched[i]:
            raise NotBatchable(f"{what}: not the same for every example")
