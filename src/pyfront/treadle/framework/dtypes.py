"""Element types. Each DType is a singleton; `_type_enum` matches the C++ core
and the DataType enum of proto/treadle/tensor.proto."""

import builtins as _builtins

import numpy as np

try:  # NumPy has no bfloat16; ml_dtypes provides the one JAX and TensorFlow use
    import ml_dtypes as _ml_dtypes
except ImportError:  # bfloat16 tensors then have no NumPy value (td.cast them)
    _ml_dtypes = None

_FLOATING = (1, 2, 14, 19)
_INTEGER = (3, 4, 9, 10)
# The largest finite bfloat16 (8 exponent bits, 7 mantissa bits).
_BFLOAT16_MAX = float.fromhex("0x1.fep127")


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
        if self._np is None:  # bfloat16 without ml_dtypes
            raise TypeError("td.bfloat16 has no NumPy dtype: install ml_dtypes (pip install ml_dtypes), or "
                            "td.cast bfloat16 tensors to float32")
        return self._np

    @property
    def as_datatype_enum(self):
        return self._type_enum

    @property
    def is_floating(self):
        return self._type_enum in _FLOATING

    @property
    def is_integer(self):
        return self._type_enum in _INTEGER

    @property
    def is_unsigned(self):
        return self._type_enum == 10

    @property
    def is_bool(self):
        return self._type_enum == 5

    @property
    def is_numeric(self):
        return self._type_enum in _FLOATING + _INTEGER

    @property
    def size(self):
        if self._type_enum == 14:
            return 2
        return 0 if self._type_enum == 6 else np.dtype(self._np).itemsize

    @property
    def min(self):
        if self._type_enum == 14:  # np.finfo does not know ml_dtypes' bfloat16
            return -_BFLOAT16_MAX
        if self.is_floating:
            return float(np.finfo(self._np).min)
        if self.is_integer:
            return int(np.iinfo(self._np).min)
        raise TypeError(f"Cannot find minimum value of {self._name}.")

    @property
    def max(self):
        if self._type_enum == 14:
            return _BFLOAT16_MAX
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
int8 = DType(9, "int8", np.int8)
uint8 = DType(10, "uint8", np.uint8)
# as_numpy_dtype is None without ml_dtypes.
bfloat16 = DType(14, "bfloat16", _ml_dtypes.bfloat16 if _ml_dtypes is not None else None)
float16 = DType(19, "float16", np.float16)
double = float64
half = float16

# Indexed by DataType number; the numbering has gaps (None).
_ALL = [None] * 20
for _d in (float32, float64, int32, int64, bool, string, resource, variant, int8, uint8, bfloat16, float16):
    _ALL[_d.as_datatype_enum] = _d
del _d
_BY_NAME = {d.name: d for d in _ALL if d is not None}
_BY_NAME.update({"float": float32, "double": float64, "half": float16})


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
        if 0 < value < len(_ALL) and _ALL[value] is not None:
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
    if kind == "f" and size in (2, 4, 8):
        return {2: float16, 4: float32, 8: float64}[size]
    if kind == "i" and size in (1, 4, 8):
        return {1: int8, 4: int32, 8: int64}[size]
    if kind == "u" and size == 1:
        return uint8
    if npd.name == "bfloat16" and size == 2:  # ml_dtypes.bfloat16
        return bfloat16
    if kind == "b":
        return bool
    if kind in "USO":
        return string
    raise TypeError(f"Cannot convert value {value!r} to a treadle DType: {npd} is not supported "
                    "(supported: float16, bfloat16, float32, float64, int8, uint8, int32, int64, bool, string).")

