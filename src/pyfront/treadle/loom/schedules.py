"""Schedule files: serialized WeaverMessages as records of a TFRecord file
(length, masked CRC-32C of the length, data, masked CRC-32C of the data), so
tf.data.TFRecordDataset reads ours and we read TensorFlow's."""

import errno
import os

from treadle import _core


def write_schedules(path, messages):
    """Writes `messages` (serialized WeaverMessages, or Weavers) to `path`, one record each."""
    from treadle.loom.weaver import Weaver
    records = []
    for m in messages:
        if isinstance(m, Weaver):
            m = m.serialize()
        if not isinstance(m, (bytes, bytearray, memoryview)):
            raise TypeError(f"write_schedules: expected serialized WeaverMessages (bytes) or Weavers, got "
                            f"{type(m).__name__}")
        records.append(bytes(m))
    _core.write_records(os.fspath(path), records)


def read_schedules(path):
    """The records of `path` as a list of bytes; DataLossError for a truncated or corrupt file,
    IsADirectoryError for a directory (which the record reader would see as an empty file)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "a schedule file is expected, not a directory", path)
    return _core.read_records(path)
