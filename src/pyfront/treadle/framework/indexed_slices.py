"""td.IndexedSlices: some slices of a tensor along its first axis, as
TensorFlow's tf.IndexedSlices. It stands for the dense tensor of shape
`dense_shape` whose row `indices[i]` is `values[i]`, where rows named several
times add up and rows never named are zero.

Gradients use it to stay sparse: the gradient of a gather with respect to
its params is one, and an optimizer applies it to the rows it names only.
Anything that needs a tensor (`td.convert_to_tensor`, an op's operand)
densifies it with UnsortedSegmentSum."""

import numpy as np

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor, register_tensor_conversion_function
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_util import constant_value
from treadle.function import trace_type

_INDEX_DTYPES = (dtypes.int32, dtypes.int64)


def _as_tensor(value, dtype_hint=None):
    if isinstance(value, Tensor):
        return value
    return convert_to_tensor(value, dtype_hint=dtype_hint)


class IndexedSlices:
    """`IndexedSlices(values, indices, dense_shape=None)`: `values` has shape
    `[len(indices)] + dense_shape[1:]`; `indices` a 1-D int32/int64 tensor;
    `dense_shape` a 1-D int32/int64 tensor (None when unknown: such a value
    cannot be densified)."""

    __slots__ = ("_values", "_indices", "_dense_shape")

    def __init__(self, values, indices, dense_shape=None):
        values = _as_tensor(values)
        indices = _as_tensor(indices, dtypes.int64)
        if indices.dtype not in _INDEX_DTYPES:
            raise TypeError(f"IndexedSlices: indices must be int32 or int64, got {indices.dtype.name}")
        if dense_shape is not None:
            dense_shape = _as_tensor(dense_shape, dtypes.int64)
            if dense_shape.dtype not in _INDEX_DTYPES:
                raise TypeError(f"IndexedSlices: dense_shape must be int32 or int64, got {dense_shape.dtype.name}")
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    @property
    def values(self):
        return self._values

    @property
    def indices(self):
        return self._indices

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self):
        return getattr(self._values, "graph", None)

    @property
    def op(self):
        return getattr(self._values, "op", None)

    @property
    def name(self):
        return getattr(self._values, "name", None)

    @property
    def shape(self):
        """The static shape of the dense tensor: unknown without dense_shape; the
        dimensions not known now are None (past the first, values' tell them)."""
        if self._dense_shape is None:
            return TensorShape(None)
        value = constant_value(self._dense_shape)
        if value is not None:
            return TensorShape([int(d) for d in value])
        rank = self._dense_shape.shape.as_tuple()
        inner = self._values.shape.as_tuple()
        if inner is not None:
            return TensorShape((None,) + inner[1:])
        if rank is not None and len(rank) == 1 and rank[0] is not None:
            return TensorShape([None] * rank[0])
        return TensorShape(None)

    def get_shape(self):
        return self.shape

    def __tf_tracing_type__(self, context):
        """As a td.function argument: its tensors by dtype and shape."""
        return IndexedSlicesType([trace_type.from_value(t, context) for t in flatten(self)])

    def __neg__(self):
        return IndexedSlices(execute("Neg", [self._values])[0], self._indices, self._dense_shape)

    def __repr__(self):
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape!r}"
        return f"IndexedSlices(indices={self._indices!r}, values={self._values!r}{shape})"

    __str__ = __repr__


def _num_rows(slices):
    """dense_shape[0] as a scalar of dense_shape's dtype (a constant when known)."""
    shape = slices.dense_shape
    value = constant_value(shape)
    if value is not None:
        return convert_to_tensor(np.asarray(value[0], dtype=shape.dtype.as_numpy_dtype))
    return execute("StridedSlice", [shape, convert_to_tensor([0]), convert_to_tensor([1]), convert_to_tensor([1])],
                   {"shrink_axis_mask": 1})[0]


def densify(slices):
    """The dense tensor `slices` stands for: rows of values added into zeros at
    their indices (duplicates add up, as in TensorFlow)."""
    if slices.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: {slices!r}")
    return execute("UnsortedSegmentSum", [slices.values, slices.indices, _num_rows(slices)])[0]


def _indexed_slices_to_tensor(value, dtype=None, name=None):
    if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
        raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for IndexedSlices with "
                         f"dtype {value.dtype.name}: {value!r}")
    return densify(value)


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)


# ---------------------------------------------------------------- flat forms

def flatten(value):
    """The tensors of a tensor or IndexedSlices (for function outputs)."""
    if isinstance(value, IndexedSlices):
        parts = [value.values, value.indices]
        if value.dense_shape is not None:
            parts.append(value.dense_shape)
        return parts
    return [value]


def num_components(value):
    return len(flatten(value))


def rebuild(like, parts):
    """The inverse of flatten: a value of the kind of `like` from its tensors."""
    if isinstance(like, IndexedSlices):
        return IndexedSlices(parts[0], parts[1], parts[2] if len(parts) > 2 else None)
    return parts[0]


class IndexedSlicesType(trace_type.SequenceType):
    """A td.IndexedSlices as a td.function argument: the types of its values,
    indices and (when it has one) dense_shape; its tensors go in that order."""

    rebuilt_in_signatures = False

    def _make(self, values):
        return IndexedSlices(*values)

    def placeholder_value(self, placeholder_context=None):
        names = ("values", "indices", "dense_shape")
        return self._make([c.placeholder_value(placeholder_context.with_name(f"{placeholder_context.name}_{n}"))
                           for c, n in zip(self.components, names)])

    def to_tensors(self, value):
        return flatten(value)

    def cast(self, value, casting_context=None):
        parts = flatten(value) if isinstance(value, IndexedSlices) else None
        if parts is None or len(parts) != len(self.components):
            raise ValueError(f"Can not cast {value!r} to {self!r}")
        return self._make([c.cast(v) for c, v in zip(self.components, parts)])

    def __repr__(self):
        return f"IndexedSlices[{', '.join(map(repr, self.components))}]"


__all__ = ["IndexedSlices", "densify"]
