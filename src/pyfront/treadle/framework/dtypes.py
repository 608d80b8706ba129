"""Element types. Each DType is a singleton; `_type_enum` matches the C++ core
and the DataType enum of proto/treadle/tensor.proto."""

import builtins as _builtins

import numpy as np


class DType:
    """The type of a tensor's elements, as `td.float32` etc."""

    __slots__ = ("_type_enum", "_name", "_np")

    def __init__(self, type_enum, name, np_dtype):
        self._type_enum = type_enum
        self._name = name
        self._np = np_dtype

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def as_datatype_enum(self):
        return self._type_enum

    @property
    def is_floating(self):
        return self._type_enum in (1, 2)

    @property
    def is_integer(self):
        return self._type_enum in (3, 4)

    @property
    def is_bool(self):
        return self._type_enum == 5

    @property
    def is_numeric(self):
        return self._type_enum in (1, 2, 3, 4)

    @property
    def size(self):
        return 0 if self._type_enum == 6 else np.dtype(self._np).itemsize

    @property
    def min(self):
        if self.is_floating:
            return float(np.finfo(self._np).min)
        if self.is_integer:
            return int(np.iinfo(self._np).min)
        raise TypeError(f"Cannot find minimum value of {self._name}.")

    @property
    def max(self):
        if self.is_floating:
            return float(np.finfo(self._np).max)
        if self.is_integer:
            return int(np.iinfo(self._np).max)
        raise TypeError(f"Cannot find maximum value of {self._name}.")

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __repr__(self):
        return f"td.{self._name}"

    def __str__(self):
        return f"<dtype: '{self._name}'>"

    def __eq__(self, other):
        if other is self:
            return True
        if other is None:
            return False
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._type_enum

    def __reduce__(self):
        return as_dtype, (self._name,)


float32 = DType(1, "float32", np.float32)
float64 = DType(2, "float64", np.float64)
int32 = DType(3, "int32", np.int32)
int64 = DType(4, "int64", np.int64)
bool = DType(5, "bool", np.bool_)  # noqa: A001 - TensorFlow's public name
string = DType(6, "string", np.object_)
resource = DType(7, "resource", np.object_)
variant = DType(8, "variant", np.object_)
double = float64

_ALL = [None, float32, float64, int32, int64, bool, string, resource, variant]
_BY_NAME = {d.name: d for d in _ALL[1:]}
_BY_NAME.update({"float": float32, "double": float64})


def as_dtype(value):
    """Converts a DType, its name, a NumPy dtype or a Python type to a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        try:
            return _BY_NAME[value]
        except KeyError:
            raise TypeError(f"Cannot convert value {value!r} to a treadle DType.") from None
    if type(value) is int:  # a DataType enum value, as TensorFlow's as_dtype takes
        if 0 < value < len(_ALL):
            return _ALL[value]
        raise TypeError(f"Cannot convert value {value!r} to a treadle DType: no DataType has that number.")
    if value is float:
        return float32
    if value is int:
        return int32
    if value is _builtins.bool:
        return bool
    if value is str or value is bytes:
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert value {value!r} to a treadle DType.") from None
    kind, size = npd.kind, npd.itemsize
    if kind == "f" and size in (4, 8):
        return float32 if size == 4 else float64
    if kind == "i" and size in (4, 8):
        return int32 if size == 4 else int64
    if kind == "b":
        return bool
    if kind in "USO":
        return string
    raise TypeError(f"Cannot convert value {value!r} to a treadle DType: {npd} is not supported "
                    "(supported: float32, float64, int32, int64, bool, string).")

