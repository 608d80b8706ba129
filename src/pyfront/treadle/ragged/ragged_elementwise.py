"""Element-wise binary ops (td.equal, td.multiply, td.subtract, ...) on
td.RaggedTensors, as TensorFlow dispatches them: two ragged tensors of the same
row partitions give a ragged tensor of the same rows, the op applied to their
flat values; a ragged tensor and a scalar apply the op to every value."""

import numpy as np

from treadle import errors
from treadle.framework import op_def_library
from treadle.framework.tensor import EagerTensor, convert_to_tensor
from treadle.ragged.ragged_tensor import RaggedTensor


def _same_rows(x, y, what):
    """Checks that two ragged tensors have the same row partitions (when known now)."""
    while isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor):
        a, b = x.row_splits, y.row_splits
        if type(a) is EagerTensor and type(b) is EagerTensor and not np.array_equal(a.numpy(), b.numpy()):
            raise errors.InvalidArgumentError(None, None, f"td.{what} of two td.RaggedTensors: their row "
                                                          f"partitions differ ({a.numpy()} and {b.numpy()})")
        x, y = x.values, y.values
    if isinstance(x, RaggedTensor) or isinstance(y, RaggedTensor):
        raise ValueError(f"td.{what} of two td.RaggedTensors: their ragged ranks differ")


def _map_values(rt, fn):
    """`rt` with fn applied to its innermost values (its rows unchanged)."""
    values = rt.values
    return rt.with_values(_map_values(values, fn) if isinstance(values, RaggedTensor) else fn(values))


def _pairs(x, y):
    """The innermost values of two ragged tensors of the same rows."""
    while isinstance(x, RaggedTensor):
        x, y = x.values, y.values
    return x, y


def _binary(op_fn, x, y):
    what = op_fn.__name__
    if isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor):
        _same_rows(x, y, what)
        flat_y = _pairs(x, y)[1]
        return _map_values(x, lambda values: op_fn(values, flat_y))
    ragged, other = (x, y) if isinstance(x, RaggedTensor) else (y, x)
    other = convert_to_tensor(other, dtype_hint=ragged.flat_values.dtype)
    if other.shape.rank != 0:
        raise ValueError(f"td.{what} of a td.RaggedTensor and a tensor of shape {other.shape}: only scalars "
                         "(or a td.RaggedTensor of the same rows) combine with a ragged tensor")
    if ragged is x:
        return _map_values(ragged, lambda values: op_fn(values, other))
    return _map_values(ragged, lambda values: op_fn(other, values))


op_def_library.BINARY_DISPATCH[RaggedTensor] = _binary
