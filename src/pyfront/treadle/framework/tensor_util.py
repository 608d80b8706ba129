"""TensorProto <-> NumPy, with TensorFlow's names (`td.make_tensor_proto`,
`td.make_ndarray`).

Protos are built with the Python classes generated from
proto/treadle/tensor.proto, the same definition the C++ core parses; reading
one back goes through the core's parser, so a proto is validated by exactly
one piece of code whichever language made it.
"""

import math

import numpy as np

from treadle import _core
from treadle import tensor_pb2
from treadle.framework import dtypes
from treadle.framework.tensor import EagerTensor, _python_to_numpy

__all__ = ["make_tensor_proto", "make_ndarray"]

_MAX_ELEMENTS = 2**40  # the core's limit (kMaxElements in src/cpp/tensor/shape.h)


def constant_value(t):
    """The value of `t` as a NumPy array when it is known now (an eager tensor
    or a Const node), else None (also for None)."""
    if type(t) is EagerTensor:
        return t._numpy_view()
    op = getattr(t, "op", None)
    if op is not None and op.type == "Const":
        return op.value._numpy_view()
    return None


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False, allow_broadcast=False):
    """A `treadle.proto.TensorProto` holding `values`.

    values: a Python scalar or nested list, a NumPy array or an eager tensor
      (Python ints become int32 and floats float32, as in `td.constant`).
    dtype: the element type of the proto; values are converted to it with
      `td.constant`'s rules (no silent float -> int, range-checked ints).
    shape: the proto's shape. A single value fills it; otherwise the number of
      elements must match (with `verify_shape`, the shape itself must), or with
      `allow_broadcast` the values must broadcast to it.
    """
    if isinstance(values, tensor_pb2.TensorProto):
        return values
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(values, EagerTensor):
        values = values.numpy()
    arr = _string_array(values) if dtype in (None, dtypes.string) else None
    if arr is None:
        arr = _python_to_numpy(values, dtype)
    if arr is None:
        raise TypeError(f"make_tensor_proto: cannot convert {values!r} (it contains symbolic tensors)")
    if shape is not None:
        arr = _fit_to_shape(arr, _as_dims(shape), verify_shape, allow_broadcast)
    proto = tensor_pb2.TensorProto()
    proto_dtype = dtype if dtype is not None else dtypes.as_dtype(arr.dtype)
    proto.dtype = proto_dtype.as_datatype_enum
    for d in arr.shape:
        proto.shape.dim.add().size = d
    if proto_dtype == dtypes.string:
        proto.string_val.extend(_as_bytes(x) for x in arr.ravel().tolist())
    else:
        # Little-endian and row-major, as the proto defines tensor_content.
        wire = np.dtype(proto_dtype.as_numpy_dtype).newbyteorder("<")
        proto.tensor_content = np.ascontiguousarray(arr, dtype=wire).tobytes()
    return proto


def make_ndarray(tensor):
    """The value of a `TensorProto` as a new NumPy array (strings as an object
    array of bytes). A malformed proto raises td.errors.InvalidArgumentError."""
    if not isinstance(tensor, tensor_pb2.TensorProto):
        raise TypeError(f"make_ndarray expects a treadle.proto.TensorProto, got {type(tensor).__name__}")
    t = _core.tensor_from_proto_bytes(tensor.SerializeToString())
    return np.array(t, copy=True)


def _string_array(values):
    """An object array of the str/bytes in `values`, or None when they are not
    all strings. NumPy's own 'S'/'U' arrays would drop trailing NUL bytes and
    refuse to mix str with bytes."""
    if isinstance(values, (str, bytes)):
        return np.array(values, dtype=object)
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "USO":
            return None
        return values if values.size == 0 or _all_str(values) else None
    if not isinstance(values, (list, tuple)):
        return None
    try:
        arr = np.array(values, dtype=object)
    except ValueError:
        return None
    return arr if arr.size and _all_str(arr) else None


def _all_str(arr):
    return arr.dtype.kind in "USO" and all(isinstance(x, (str, bytes)) for x in arr.ravel().tolist())


def _as_dims(shape):
    dims = []
    for d in shape:
        if d is None or int(d) < 0:
            raise ValueError(f"make_tensor_proto: shape must be fully defined and non-negative, got {list(shape)}")
        dims.append(int(d))
    return tuple(dims)


def _fit_to_shape(arr, dims, verify_shape, allow_broadcast):
    if arr.shape == dims:
        return arr
    n = math.prod(dims)
    if n > _MAX_ELEMENTS:
        raise ValueError(f"make_tensor_proto: shape {dims} has more than 2**40 elements")
    if verify_shape:
        raise TypeError(f"make_tensor_proto: expected a value of shape {dims}, got shape {arr.shape}")
    if allow_broadcast:
        try:
            return np.broadcast_to(arr, dims)
        except ValueError:
            raise ValueError(f"make_tensor_proto: cannot broadcast a value of shape {arr.shape} "
                             f"to shape {dims}") from None
    if arr.size == 1:
        return np.broadcast_to(arr.reshape(()), dims)
    if arr.size != n:
        raise ValueError(f"make_tensor_proto: shape {dims} takes {n} elements, but {arr.size} were given")
    return arr.reshape(dims)


def _as_bytes(x):
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode("utf-8")
    raise TypeError(f"make_tensor_proto: string tensors hold str or bytes, got {x!r}")
