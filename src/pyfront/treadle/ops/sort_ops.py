"""td.sort, td.argsort and td.math.top_k, on the TopKV2 op."""

import collections

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops
from treadle.ops.array_ops import _int_scalar
from treadle.ops.math_ops import cast

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002 (TensorFlow's names)
    """(values, indices) of the k largest entries of each row (the last dimension), largest first."""
    values, indices = execute("TopKV2", [convert_to_tensor(input), _int_scalar(k, "k")], {"sorted": bool(sorted)},
                              name=name)
    if dtypes.as_dtype(index_type) != dtypes.int32:
        indices = cast(indices, index_type)
    return TopKV2(values, indices)


def _to_last(x, axis):
    """x with `axis` moved last, and the permutation that moves it back."""
    rank = x.shape.rank
    if rank is None:
        raise ValueError("sort/argsort: the rank of values must be known")
    if rank == 0:
        raise ValueError("sort/argsort: values must have rank >= 1")
    axis = axis % rank
    if axis == rank - 1:
        return x, None
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [0] * rank
    for i, p in enumerate(perm):
        back[p] = i
    return array_ops.transpose(x, perm), back


def _order_key(x, direction):
    """Values whose descending order is `direction`'s order of x."""
    if direction == "DESCENDING":
        return x
    if direction != "ASCENDING":
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    # Negation reverses the order; for integers ~x does it without overflowing at the minimum.
    return execute("Invert" if x.dtype.is_integer else "Neg", [x])[0]


def _top_all(values, axis, direction):
    """TopKV2 over the whole of `axis` (moved last) of the order key: (sorted keys, indices, permutation back)."""
    moved, back = _to_last(convert_to_tensor(values), axis)
    keys, idx = execute("TopKV2", [_order_key(moved, direction), array_ops.shape(moved)[-1]])
    return keys, idx, back


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort values along axis (equal values keep their order)."""
    _, idx, back = _top_all(values, axis, direction)
    return idx if back is None else array_ops.transpose(idx, back)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """values sorted along axis (differentiable: the gradient goes back to where each value came from)."""
    keys, _, back = _top_all(values, axis, direction)
    out = _order_key(keys, direction)  # the key is its own inverse
    return out if back is None else array_ops.transpose(out, back)


PUBLIC = {"": ["sort", "argsort"], "math": ["top_k"], "nn": ["top_k"]}
