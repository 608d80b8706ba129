"""td.ragged.constant: a RaggedTensor (or, for a flat list, a Tensor) from a
nested Python list, with TensorFlow's rules for the ragged rank: the nesting
depth K of the scalars (or, with no scalars, one more than the depth of the
deepest empty list), and by default ragged_rank = K - 1 - len(inner_shape)."""

import itertools

import numpy as np

from treadle.framework import dtypes
from treadle.framework.tensor import constant as dense_constant
from treadle.ragged.ragged_tensor import RaggedTensor


def _scalar_depths(value, depth, found):
    """Collects the depths at which scalars occur; returns the deepest depth
    of an empty list (-1 when there is none)."""
    if not isinstance(value, (list, tuple)):
        found.add(depth)
        return -1
    if not value:
        return depth
    return max(_scalar_depths(v, depth + 1, found) for v in value)


def _nesting_depth(pylist):
    found = set()
    deepest_empty = _scalar_depths(pylist, 0, found)
    if len(found) > 1:
        raise ValueError(f"td.ragged.constant: all scalar values must have the same nesting depth, got depths "
                         f"{sorted(found)}")
    if found:
        depth = found.pop()
        if deepest_empty >= depth:
            raise ValueError("td.ragged.constant: an empty list is nested as deep as the scalars")
        return depth
    return deepest_empty + 1


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype=dtypes.int64):
    """As tf.ragged.constant. treadle's RaggedTensor has one ragged dimension,
    so ragged_rank (given or implied) must be 0 (a Tensor) or 1."""
    if isinstance(pylist, RaggedTensor) or not isinstance(pylist, (list, tuple)):
        return dense_constant(pylist, dtype=dtype)
    depth = _nesting_depth(pylist)
    inner = tuple(inner_shape) if inner_shape is not None else ()
    if ragged_rank is None:
        ragged_rank = max(depth - 1 - len(inner), 0)
    if ragged_rank < 0:
        raise ValueError(f"td.ragged.constant: ragged_rank must be non-negative, got {ragged_rank}")
    if ragged_rank == 0:
        return dense_constant(pylist, dtype=dtype)
    if ragged_rank != 1:
        raise NotImplementedError(f"td.ragged.constant: treadle's RaggedTensor has one ragged dimension; this list "
                                  f"nests {depth} deep, which makes ragged_rank {ragged_rank}. Pass ragged_rank=1 "
                                  "(or inner_shape) when the rows' entries all have the same shape")
    for i, row in enumerate(pylist):
        if not isinstance(row, (list, tuple)):
            raise ValueError(f"td.ragged.constant: row {i} is {row!r}, not a list")
    flat = list(itertools.chain.from_iterable(pylist))
    values = _values(flat, dtype, inner, depth)
    splits = np.cumsum([0] + [len(r) for r in pylist]).astype(dtypes.as_dtype(row_splits_dtype).as_numpy_dtype)
    return RaggedTensor.from_row_splits(values, dense_constant(splits), validate=False)


def _values(flat, dtype, inner, depth):
    if flat:
        values = dense_constant(flat, dtype=dtype)
        if inner and tuple(values.shape.as_list()[1:]) != inner:
            raise ValueError(f"td.ragged.constant: the rows' entries have shape {values.shape[1:]}, not the given "
                             f"inner_shape {list(inner)}")
        return values
    # No values: float32 unless told otherwise, with the inner dimensions the
    # nesting implies (0 where unknown) or those given.
    shape = (0,) + (inner if inner else (0,) * max(depth - 2, 0))
    np_dtype = dtypes.as_dtype(dtype or dtypes.float32).as_numpy_dtype
    return dense_constant(np.zeros(shape, dtype=np_dtype), dtype=dtype)
