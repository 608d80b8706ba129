"""Schedules handed over by other libraries: a TensorFlow string tensor (a
scalar message or a vector of them, as tf.data batches schedule files), a
NumPy array of bytes, or any object that speaks DLPack or the buffer protocol
holding one serialized message's bytes."""

import numpy as np


def as_messages(obj):
    """bytes, or a list of bytes, for a foreign schedule object; None when `obj` is none of these."""
    if isinstance(obj, np.ndarray):
        return _from_array(obj)
    numpy = getattr(obj, "numpy", None)
    if callable(numpy) and getattr(obj, "dtype", None) is not None:  # tf.Tensor and the like
        value = numpy()
        return value if isinstance(value, bytes) else _from_array(np.asarray(value))
    if hasattr(obj, "__dlpack__"):
        return _from_array(np.from_dlpack(obj))
    try:
        return bytes(memoryview(obj).cast("B"))
    except TypeError:
        return None


def _from_array(arr):
    if arr.dtype == object or arr.dtype.kind == "S":
        if arr.ndim > 1:
            raise ValueError(f"a loom schedule array must be a scalar or a vector of messages, got shape {arr.shape}")
        items = [arr.item()] if arr.ndim == 0 else list(arr)
        for i, item in enumerate(items):
            if not isinstance(item, bytes):
                raise TypeError(f"a loom schedule array holds {type(item).__name__} at {i}, not bytes")
        return items[0] if arr.ndim == 0 else items
    if arr.dtype in (np.uint8, np.int8) and arr.ndim == 1:
        return arr.tobytes()
    raise TypeError(f"a loom schedule given as an array must hold bytes objects, or be a 1-D uint8 buffer of one "
                    f"message; got dtype {arr.dtype} and shape {arr.shape}")
