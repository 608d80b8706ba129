"""Arrays as tf.train.Example records, so TensorFlow reads what treadle
writes (`tf.data.TFRecordDataset` + `tf.io.parse_single_example`).

treadle has no Example message of its own, and one small writer does not
justify one, so the few wire-format pieces an Example needs are encoded here:
Example{features=1: Features{feature=1: map<string, Feature>}},
Feature{bytes_list=1 | int64_list=3}, each list a repeated field 1."""

import numpy as np

from treadle import _core


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # negative int64s are ten-byte two's complement varints
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _bytes_feature(values):
    return _field(1, b"".join(_field(1, v) for v in values))


def _int64_feature(values):
    packed = b"".join(_varint(int(v)) for v in values)
    return _field(3, _field(1, packed))


def example(features):
    """A serialized tf.train.Example; `features` maps names to lists of bytes or of ints."""
    entries = []
    for name, values in features.items():
        values = list(values)
        if values and isinstance(values[0], bytes):
            feature = _bytes_feature(values)
        else:
            feature = _int64_feature(values)
        entries.append(_field(1, _field(1, name.encode()) + _field(2, feature)))
    return _field(1, b"".join(entries))


def write_arrays_as_examples(path, batch, type_shape_index):
    """One Example per row of `batch`: 'value' (its bytes, little-endian), 'dtype'
    (its NumPy name), 'shape' and 'type_shape' (the loom's type shape index)."""
    batch = np.asarray(batch)
    row_dtype = batch.dtype.newbyteorder("<")
    records = []
    for row in batch:
        records.append(example({
            "value": [np.ascontiguousarray(row, dtype=row_dtype).tobytes()],
            "dtype": [row_dtype.name.encode()],
            "shape": list(row.shape),
            "type_shape": [type_shape_index],
        }))
    _core.write_records(str(path), records)
