"""td.ragged.constant: a RaggedTensor (or, for a list nested less than two
deep, a Tensor) from a nested Python list, with TensorFlow's rules:

- every scalar must sit at the same depth K (the scalar depth); lists with no
  scalars count by the depth of their deepest empty list;
- by default ragged_rank = K - 1 - len(inner_shape) (at least 1), and the
  dimensions below the ragged ones are uniform (inner_shape, given or read
  from the first entries and checked against all the others);
- the result has one row-splits vector per ragged dimension."""

import numpy as np

from treadle.framework import dtypes
from treadle.framework.tensor import constant as dense_constant
from treadle.ragged.ragged_tensor import RaggedTensor


def _is_list(value):
    return isinstance(value, (list, tuple)) or np.ndim(value) != 0


def _depths(value):
    """(scalar depth or None when there are no scalars, deepest list depth)."""
    if not _is_list(value):
        return 0, 0
    scalar_depth, max_depth = None, 1
    for child in value:
        child_scalar, child_max = _depths(child)
        if child_scalar is not None:
            if scalar_depth is not None and scalar_depth != child_scalar + 1:
                raise ValueError("td.ragged.constant: all scalar values must have the same nesting depth")
            scalar_depth = child_scalar + 1
        max_depth = max(max_depth, child_max + 1)
    return scalar_depth, max_depth


def _flatten_rows(rows, ragged_rank):
    """Collapses `ragged_rank` list levels: (the splits of each, the entries left)."""
    nested_splits = []
    for dim in range(ragged_rank):
        if not all(_is_list(r) for r in rows):
            raise ValueError(f"td.ragged.constant: pylist has scalar values depth {dim + 1}, but "
                             f"ragged_rank={ragged_rank} requires scalar value depth greater than {ragged_rank}")
        splits, entries = [0], []
        for row in rows:
            splits.append(splits[-1] + len(row))
            entries.extend(row)
        nested_splits.append(splits)
        rows = entries
    return nested_splits, rows


def _shape_of_first(item):
    """The shape of a nested list, read from its first entries alone."""
    if not _is_list(item):
        return ()
    return (len(item),) + (_shape_of_first(item[0]) if len(item) else ())


def _check_uniform(item, shape):
    if _is_list(item) != bool(shape) or (shape and shape[0] != len(item)):
        raise ValueError("td.ragged.constant: inner values have inconsistent shape")
    for child in (item if shape else ()):
        _check_uniform(child, shape[1:])


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype=dtypes.int64):
    """As tf.ragged.constant."""
    if ragged_rank is not None and ragged_rank < 0:
        raise ValueError(f"td.ragged.constant: invalid ragged_rank={ragged_rank}: must be nonnegative")
    if isinstance(pylist, RaggedTensor) or not _is_list(pylist):
        return dense_constant(pylist, dtype=dtype)
    inner = None if inner_shape is None else tuple(int(d) for d in inner_shape)
    scalar_depth, max_depth = _depths(pylist)
    if scalar_depth is not None:
        if max_depth > scalar_depth:
            raise ValueError(f"td.ragged.constant: invalid pylist={pylist!r}: empty list nesting is greater than "
                             "scalar value nesting")
        if ragged_rank is not None and max_depth < ragged_rank:
            raise ValueError(f"td.ragged.constant: invalid pylist={pylist!r}, max depth smaller than "
                             f"ragged_rank={ragged_rank}")
    if inner is not None and ragged_rank is not None:
        expected = ragged_rank + len(inner) + 1
        if (scalar_depth is not None and expected != scalar_depth) or (scalar_depth is None and expected < max_depth):
            raise ValueError(f"td.ragged.constant: invalid pylist={pylist!r}: incompatible with "
                             f"ragged_rank={ragged_rank} and dim(inner_shape)={len(inner)}")
    if ragged_rank == 0 or (ragged_rank is None and (max_depth < 2 or (inner is not None and
                                                                         max_depth - len(inner) < 2))):
        return _dense(pylist, dtype, inner)
    if ragged_rank is None:
        inner = inner or ()
        depth = max_depth if scalar_depth is None else scalar_depth - len(inner)
        ragged_rank = max(1, depth - 1)
    nested_splits, entries = _flatten_rows(pylist, ragged_rank)
    if inner is None:
        inner = _shape_of_first(entries)[1:]
        _check_uniform(entries, (len(entries),) + inner)
    values = _values(entries, dtype, inner)
    np_splits = dtypes.as_dtype(row_splits_dtype).as_numpy_dtype
    return RaggedTensor.from_nested_row_splits(
        values, [dense_constant(np.asarray(s, dtype=np_splits)) for s in nested_splits], validate=False)


def _dense(pylist, dtype, inner):
    """A Tensor (ragged_rank 0): of shape `inner` when given, as tf.constant's shape argument."""
    if inner is None:
        return dense_constant(pylist, dtype=dtype)
    array = np.asarray(pylist)
    if array.size != int(np.prod(inner, dtype=np.int64)):
        raise ValueError(f"td.ragged.constant: {array.size} values do not fill inner_shape={list(inner)}")
    if array.size == 0 and dtype is None:
        array = array.astype(np.float32)
    return dense_constant(array.reshape(inner), dtype=dtype)


def _values(entries, dtype, inner):
    """The flat values: `entries` as a tensor of shape [len(entries), *inner]
    (float32 when there are none and no dtype is given)."""
    shape = (len(entries),) + tuple(inner)
    if not entries or not np.size(np.asarray(entries, dtype=object)):
        np_dtype = dtypes.as_dtype(dtype or dtypes.float32).as_numpy_dtype
        return dense_constant(np.zeros(shape, dtype=np_dtype), dtype=dtype)
    values = dense_constant(entries, dtype=dtype)
    if tuple(values.shape.as_list()) != shape:
        raise ValueError(f"td.ragged.constant: the values have shape {values.shape}, not the shape {list(shape)} "
                         "that inner_shape gives them")
    return values
