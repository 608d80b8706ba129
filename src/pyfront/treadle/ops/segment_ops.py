"""td.repeat and td.math.unsorted_segment_mean, with TensorFlow's signatures.
td.math.segment_sum and unsorted_segment_sum/max are generated from the op
registry (segment_ops.cc)."""

import numpy as np

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor


def _run1(op_name, inputs, attrs=None, name=None):
    return execute(op_name, inputs, attrs, name=name)[0]


def _index_tensor(value, what):
    t = value if isinstance(value, Tensor) else convert_to_tensor(np.asarray(value) if not isinstance(value, int)
                                                                   else value, dtype_hint=dtypes.int32)
    if t.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{what} must be int32 or int64, got {t.dtype.name}")
    return t


def repeat(input, repeats, axis=None, name=None):  # noqa: A002 (TensorFlow's argument name)
    """Repeats each entry of `input` along `axis` `repeats[i]` times (a scalar
    `repeats` repeats every entry alike); with axis=None, `input` is flattened
    first. As tf.repeat."""
    x = convert_to_tensor(input)
    r = _index_tensor(repeats, "td.repeat: repeats")
    if axis is None:
        x = _run1("Reshape", [x, convert_to_tensor([-1], dtype=dtypes.int32)])
        axis = 0
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"td.repeat: axis must be an int or None, got {axis!r}")
    return _run1("Repeat", [x, r], {"axis": int(axis)}, name)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of each segment's rows (0 for an empty segment; negative ids are
    dropped), as tf.math.unsorted_segment_mean: the segment sum divided by the
    segment's row count."""
    data = convert_to_tensor(data)
    ids = _index_tensor(segment_ids, "td.math.unsorted_segment_mean: segment_ids")
    num = _index_tensor(num_segments, "td.math.unsorted_segment_mean: num_segments")
    if not data.dtype.is_floating:
        raise TypeError(f"td.math.unsorted_segment_mean: data must be float32 or float64, got {data.dtype.name}")
    total = _run1("UnsortedSegmentSum", [data, ids, num])
    ones = _run1("OnesLike", [ids])
    count = _run1("Cast", [_run1("UnsortedSegmentSum", [ones, ids, num])], {"DstT": data.dtype})
    count = _run1("Maximum", [count, convert_to_tensor(1, dtype=data.dtype)])
    # count is a vector (one per segment): give it data's trailing dims to broadcast.
    if data.shape.rank is None or ids.shape.rank is None:
        raise ValueError("td.math.unsorted_segment_mean needs the ranks of data and segment_ids to be known")
    extra = data.shape.rank - ids.shape.rank
    count = _run1("Reshape", [count, convert_to_tensor([-1] + [1] * extra, dtype=dtypes.int32)])
    return _run1("RealDiv", [total, count], name=name)


PUBLIC = {"": ["repeat"], "math": ["unsorted_segment_mean"]}
