"""TensorSpec: the dtype and (partial) shape a function argument must have."""

from treadle.framework import dtypes
from treadle.framework.tensor import Tensor
from treadle.framework.tensor_shape import TensorShape, as_shape
from treadle.framework.type_spec import TypeSpec


class TensorSpec(TypeSpec):
    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    @property
    def shape(self):
        return self._shape

    @property
    def value_type(self):
        return Tensor

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    def is_compatible_with(self, spec_or_tensor):
        """True when a tensor of `spec_or_tensor`'s dtype and shape fits this spec."""
        return (self._dtype == spec_or_tensor.dtype
                and TensorShape(spec_or_tensor.shape).is_subtype_of(self._shape))

    def is_subtype_of(self, other):
        return (isinstance(other, TensorSpec) and self._dtype == other._dtype
                and self._shape.is_subtype_of(other._shape))

    def most_specific_common_supertype(self, others):
        shape = self._shape
        for o in others:
            if not isinstance(o, TensorSpec) or o._dtype != self._dtype:
                return None
            shape = shape.most_specific_compatible_shape(o._shape)
        return TensorSpec(shape, self._dtype, self._name)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._dtype == other._dtype and self._shape == other._shape
                and self._name == other._name)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self):
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"

    def __reduce__(self):
        return TensorSpec, (self._shape.dims, self._dtype.name, self._name)
