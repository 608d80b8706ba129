"""td.RaggedTensorSpec: TensorFlow's public name for the type of a ragged argument."""
from treadle.framework import dtypes
from treadle.framework.tensor_shape import TensorShape
from treadle.ragged.ragged_tensor import RaggedTensorType


def RaggedTensorSpec(shape=None, dtype=dtypes.float32, ragged_rank=None, row_splits_dtype=dtypes.int64,
                     flat_values_spec=None):  # noqa: N802 (TensorFlow's name)
    """The type of a td.RaggedTensor, as TensorFlow's `tf.RaggedTensorSpec(shape, dtype, ...)`.

    `shape` is the ragged tensor's shape (rows first, None for the ragged dimensions);
    `ragged_rank` defaults to rank - 1. Usable in `input_signature` and `get_concrete_function`;
    the number of rows (shape[0]) is part of the type where given, the number of values never,
    as in TensorFlow's traces.
    """
    if flat_values_spec is not None:
        raise ValueError("td.RaggedTensorSpec: flat_values_spec is not supported; give shape and dtype")
    shape = TensorShape(shape)
    if shape.rank is None:
        raise ValueError("td.RaggedTensorSpec: the shape needs a known rank (at least 2)")
    rank = shape.rank - 1 if ragged_rank is None else ragged_rank
    if not isinstance(rank, int) or not 1 <= rank < shape.rank:
        raise ValueError(f"td.RaggedTensorSpec: ragged_rank must be in [1, {shape.rank - 1}] for shape {shape}, "
                         f"got {ragged_rank!r}")
    flat_values_shape = [None] + shape.as_list()[rank + 1:]
    nrows = shape.as_list()[0]
    if rank == 1:
        return RaggedTensorType(dtype, flat_values_shape, row_splits_dtype, nrows=nrows)
    if "ragged_rank" not in RaggedTensorType.__slots__:
        raise ValueError(f"td.RaggedTensorSpec: ragged_rank {rank} is not supported; td.RaggedTensor has one "
                         "ragged dimension")
    return RaggedTensorType(dtype, flat_values_shape, row_splits_dtype, ragged_rank=rank, nrows=nrows)
