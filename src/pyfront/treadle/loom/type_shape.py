"""TypeShape: the type of one value in a loom (a dtype, a fully defined shape
without the batch dimension, and a tag)."""

import numpy as np

from treadle.framework import dtypes

LOOM_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.uint8,
               dtypes.int32, dtypes.int64, dtypes.bool)


class TypeShape(tuple):
    """`TypeShape(dtype, shape, tag='')`: hashable and ordered, like TensorFlow
    Fold's. Values of the same dtype and shape but different tags never mix."""

    __slots__ = ()

    def __new__(cls, dtype, shape, tag=""):
        dtype = dtypes.as_dtype(dtype.dtype if isinstance(dtype, np.ndarray) else dtype)
        if dtype not in LOOM_DTYPES:
            raise TypeError(f"TypeShape: dtype {dtype.name} cannot be a loom type "
                            f"({', '.join(d.name for d in LOOM_DTYPES)})")
        if shape is None:
            raise TypeError("TypeShape: the shape must be fully defined, got None")
        if hasattr(shape, "as_list"):
            shape = shape.as_list()
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(f"TypeShape: shape must be a sequence of ints, got {shape!r}") from None
        for d in dims:
            if d is None or isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
                raise TypeError(f"TypeShape: shape must be fully defined non-negative ints, got {shape!r}")
        if not isinstance(tag, str):
            raise TypeError(f"TypeShape: tag must be a string, got {tag!r}")
        return tuple.__new__(cls, (dtype, tuple(int(d) for d in dims), tag))

    @property
    def dtype(self):
        """The values' `td.DType`."""
        return self[0]

    @property
    def shape(self):
        """The shape of one value, without the batch dimension: a tuple of ints."""
        return self[1]

    @property
    def tag(self):
        """The tag that tells apart type shapes of the same dtype and shape (a string, '' by default)."""
        return self[2]

    @property
    def dtype_enum(self):
        """The dtype's DataType number (as in TensorFlow's protos)."""
        return self[0].as_datatype_enum

    def _sort_key(self):
        return (self[0].name, len(self[1]), self[1], self[2])

    def __lt__(self, other):
        return self._sort_key() < other._sort_key()

    def __getnewargs__(self):
        return (self[0].name, self[1], self[2])

    def __repr__(self):
        return f"TypeShape(dtype='{self[0].name}', shape={self[1]!r}, tag={self[2]!r})"


def type_shape_of(value, tag=""):
    """The TypeShape of a tensor, variable or array value."""
    shape = value.shape
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    return TypeShape(value.dtype, shape, tag)
