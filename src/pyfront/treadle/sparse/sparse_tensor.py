"""td.SparseTensor: TensorFlow's sparse representation, three tensors:
`indices` (int64 [nnz, rank], one row per stored entry), `values` ([nnz]) and
`dense_shape` (int64 [rank]). It is a composite value: it crosses td.function
boundaries (traced per td.SparseTensorSpec, fed as its three components),
graph loops and conds as those components."""

import numpy as np

from treadle.framework import dtypes
from treadle.framework.tensor import EagerTensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_spec import TensorSpec
from treadle.framework.type_spec import TypeSpec
from treadle.function.trace_type import TraceType


def _static_shape(dense_shape):
    """The TensorShape a dense_shape tensor gives while tracing: its value when
    known (an eager tensor or a constant), else unknown dimensions."""
    if type(dense_shape) is EagerTensor:
        return TensorShape(dense_shape.numpy().tolist())
    op = getattr(dense_shape, "op", None)
    if op is not None and op.type == "Const" and getattr(op, "value", None) is not None:
        return TensorShape(op.value.numpy().tolist())
    n = dense_shape.shape[0] if dense_shape.shape.rank == 1 else None
    return TensorShape(None if n is None else [None] * n)


class SparseTensor:
    """`td.SparseTensor(indices, values, dense_shape)`, as tf.sparse.SparseTensor."""

    __slots__ = ("_indices", "_values", "_dense_shape", "_shape")
    _td_extension_type = True  # a td.function returns it as its components, rebuilt by the caller

    def __init__(self, indices, values, dense_shape):
        self._indices = convert_to_tensor(indices, dtype=dtypes.int64)
        self._values = convert_to_tensor(values)
        self._dense_shape = convert_to_tensor(dense_shape, dtype=dtypes.int64)
        i, v, s = self._indices.shape, self._values.shape, self._dense_shape.shape
        if i.rank not in (None, 2):
            raise ValueError(f"td.SparseTensor: indices must be a matrix [nnz, rank], got shape {i}")
        if v.rank not in (None, 1):
            raise ValueError(f"td.SparseTensor: values must be a vector [nnz], got shape {v}")
        if s.rank not in (None, 1):
            raise ValueError(f"td.SparseTensor: dense_shape must be a vector [rank], got shape {s}")
        if i.rank == 2 and v.rank == 1 and None not in (i[0], v[0]) and i[0] != v[0]:
            raise ValueError(f"td.SparseTensor: {i[0]} indices but {v[0]} values")
        if i.rank == 2 and s.rank == 1 and None not in (i[1], s[0]) and i[1] != s[0]:
            raise ValueError(f"td.SparseTensor: indices have {i[1]} columns but dense_shape has rank {s[0]}")
        self._shape = _static_shape(self._dense_shape)

    @classmethod
    def from_value(cls, value):
        return value if isinstance(value, SparseTensor) else cls(value.indices, value.values, value.dense_shape)

    # ------------------------------------------------------------ TensorFlow's accessors
    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def ndim(self):
        return self._shape.rank

    def set_shape(self, shape):
        shape = TensorShape(shape)
        if not self._shape.is_compatible_with(shape):
            raise ValueError(f"td.SparseTensor: shape {shape} is not compatible with {self._shape}")
        self._shape = self._shape.merge_with(shape)

    def with_values(self, new_values):
        """The same indices and dense shape, holding `new_values` (one per entry)."""
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def numpy(self):
        """The dense NumPy array (zeros where no entry is stored)."""
        dense = np.zeros(self._dense_shape.numpy(), dtype=self._values.numpy().dtype)
        for index, value in zip(self._indices.numpy(), self._values.numpy()):
            dense[tuple(index)] = value
        return dense

    def __repr__(self):
        return f"SparseTensor(indices={self._indices!r}, values={self._values!r}, dense_shape={self._dense_shape!r})"

    # ------------------------------------------------------------ composite protocol
    def _to_components(self):
        return [self._indices, self._values, self._dense_shape]

    def _from_components(self, parts):
        return SparseTensor(*parts)

    def _component_invariants(self, shape=None):
        """Component shapes a loop keeps: the number of entries may change from
        one iteration to the next (as TensorFlow's SparseTensorSpec allows);
        `shape`, a shape invariant of the dense tensor, relaxes its rank too."""
        rank = self._indices.shape[1] if self._indices.shape.rank == 2 else None
        if shape is not None and TensorShape(shape).rank is None:
            rank = None
        return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]

    def __tf_tracing_type__(self, context):
        return SparseTensorSpec(self._shape, self.dtype)


class SparseTensorSpec(TypeSpec, TraceType):
    """td.SparseTensorSpec(shape, dtype): the TraceType (and spec) of a
    td.SparseTensor argument: its dense shape (None where it varies) and
    dtype. The number of stored entries is never part of it. As a TypeSpec it
    may stand in an input_signature."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape=None, dtype=dtypes.float32):
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)

    @property
    def value_type(self):
        return SparseTensor

    def is_subtype_of(self, other):
        return type(other) is SparseTensorSpec and other.dtype == self.dtype and \
            self.shape.is_subtype_of(other.shape)

    def most_specific_common_supertype(self, others):
        shape = self.shape
        for o in others:
            if type(o) is not SparseTensorSpec or o.dtype != self.dtype:
                return None
            shape = shape.most_specific_compatible_shape(o.shape)
        return SparseTensorSpec(shape, self.dtype)

    def placeholder_value(self, placeholder_context=None):
        graph, name = placeholder_context.graph, placeholder_context.name
        rank = self.shape.rank
        indices = graph.add_placeholder(dtypes.int64, TensorShape([None, rank]), f"{name}_indices")
        values = graph.add_placeholder(self.dtype, TensorShape([None]), f"{name}_values")
        dense_shape = graph.add_placeholder(dtypes.int64, TensorShape([rank]), f"{name}_dense_shape")
        sp = SparseTensor(indices, values, dense_shape)
        sp.set_shape(self.shape)
        return sp

    def _component_specs(self):
        rank = self.shape.rank
        return [TensorSpec([None, rank], dtypes.int64), TensorSpec([None], self.dtype),
                TensorSpec([rank], dtypes.int64)]

    def to_tensors(self, value):
        if isinstance(value, SparseTensorSpec):  # get_concrete_function(spec): the components' specs
            return value._component_specs()
        return [value.indices, value.values, value.dense_shape]

    def cast(self, value, casting_context=None):
        """`value` for a parameter of this spec (an input_signature's). As
        TensorFlow, component by component: a values dtype or a rank that
        differs names the component that does not fit. Unlike TensorFlow, a
        known dense shape that contradicts the spec's is refused too (the
        traced function relies on it)."""
        if isinstance(value, SparseTensorSpec):  # get_concrete_function(spec)
            if not value.is_subtype_of(self):
                raise TypeError(f"Can not cast {value!r} to {self!r}")
            return value
        if not isinstance(value, SparseTensor):
            raise TypeError(f"Can not cast {value!r} to {self!r}")
        for component, spec in zip(self.to_tensors(value), self._component_specs()):
            given = TensorSpec(component.shape, component.dtype)
            if not given.is_subtype_of(spec):
                raise TypeError(f"Can not cast {given!r} to {spec!r}")
        if not value.shape.is_subtype_of(self.shape):
            raise TypeError(f"Can not cast {value.__tf_tracing_type__(None)!r} to {self!r}")
        return value

    def __eq__(self, other):
        return type(other) is SparseTensorSpec and other.dtype == self.dtype and other.shape == self.shape

    def __hash__(self):
        return hash((SparseTensorSpec, self.dtype, self.shape))

    def __repr__(self):
        return f"SparseTensorSpec({self.shape!r}, {self.dtype!r})"

