"""The TraceType of a td.RaggedTensor argument of a td.function: its dtype, its
ragged rank, the row-splits dtype and the shape of its flat values with the
varying dimensions (the number of values; with it the number of rows) left
unknown. Every ragged tensor of that spec shares one trace; it reaches the
traced function as its components (flat values, then row splits), from which
the function's placeholder RaggedTensor is rebuilt."""

from treadle.framework import dtypes
from treadle.framework.tensor_shape import TensorShape
from treadle.function.trace_type import TraceType


class RaggedTensorType(TraceType):
    """`RaggedTensorType(dtype, flat_values_shape, row_splits_dtype)`, with the
    ragged rank of treadle's RaggedTensor (1). Dimension 0 of the flat values
    is always unknown; the inner dimensions are as given (None for any)."""

    __slots__ = ("dtype", "flat_values_shape", "row_splits_dtype")

    ragged_rank = 1

    def __init__(self, dtype, flat_values_shape, row_splits_dtype=dtypes.int64):
        self.dtype = dtypes.as_dtype(dtype)
        shape = TensorShape(flat_values_shape)
        if shape.rank is None or shape.rank < 1:
            raise ValueError(f"RaggedTensorType: flat values need a known rank >= 1, got {shape}")
        self.flat_values_shape = TensorShape([None] + shape.as_list()[1:])
        self.row_splits_dtype = dtypes.as_dtype(row_splits_dtype)

    @classmethod
    def of(cls, rt):
        return cls(rt.flat_values.dtype, rt.flat_values.shape, rt.row_splits.dtype)

    def _same_kind(self, other):
        return (type(other) is RaggedTensorType and other.dtype == self.dtype
                and other.row_splits_dtype == self.row_splits_dtype
                and other.flat_values_shape.rank == self.flat_values_shape.rank)

    def is_subtype_of(self, other):
        return self._same_kind(other) and self.flat_values_shape.is_subtype_of(other.flat_values_shape)

    def most_specific_common_supertype(self, others):
        shape = self.flat_values_shape
        for o in others:
            if not self._same_kind(o):
                return None
            shape = shape.most_specific_compatible_shape(o.flat_values_shape)
        return RaggedTensorType(self.dtype, shape, self.row_splits_dtype)

    def placeholder_value(self, placeholder_context=None):
        from treadle.ragged.ragged_tensor import RaggedTensor
        graph, name = placeholder_context.graph, placeholder_context.name
        values = graph.add_placeholder(self.dtype, self.flat_values_shape, f"{name}_flat_values")
        splits = graph.add_placeholder(self.row_splits_dtype, TensorShape([None]), f"{name}_row_splits")
        return RaggedTensor(values, splits, internal=True)

    def to_tensors(self, value):
        return [value.flat_values, value.row_splits]

    def cast(self, value, casting_context=None):
        from treadle.ragged.ragged_tensor import RaggedTensor
        if not isinstance(value, RaggedTensor) or not RaggedTensorType.of(value).is_subtype_of(self):
            raise ValueError(f"Can not cast {value!r} to {self!r}")
        return value

    def __eq__(self, other):
        return self._same_kind(other) and other.flat_values_shape == self.flat_values_shape

    def __hash__(self):
        return hash((RaggedTensorType, self.dtype, self.flat_values_shape, self.row_splits_dtype))

    def __repr__(self):
        return (f"RaggedTensor[{self.dtype.name}, ragged_rank={self.ragged_rank}, flat_values_shape="
                f"{self.flat_values_shape}, row_splits_dtype={self.row_splits_dtype.name}]")
