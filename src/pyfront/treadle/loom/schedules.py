"""Schedule files: serialized WeaverMessages as records of a TFRecord file
(length, masked CRC-32C of the length, data, masked CRC-32C of the data), so
tf.data.TFRecordDataset reads ours and we read TensorFlow's. A file may be
GZIP- or ZLIB-compressed as a whole, as TensorFlow writes them; reading one
with the wrong compression_type says which it has."""

import errno
import os

from treadle import _core
from treadle.loom.weaver import Weaver


def write_schedules(path, messages, compression_type=None):
    """Writes `messages` (serialized WeaverMessages, or Weavers) to `path`, one
    record each; compression_type None, 'GZIP' or 'ZLIB'."""
    records = []
    for m in messages:
        if isinstance(m, Weaver):
            m = m.serialize()
        if not isinstance(m, (bytes, bytearray, memoryview)):
            raise TypeError(f"write_schedules: expected serialized WeaverMessages (bytes) or Weavers, got "
                            f"{type(m).__name__}")
        records.append(bytes(m))
    _core.write_record_file(os.fspath(path), records, compression_type or "")


def read_schedules(path, compression_type=None):
    """The records of `path` as a list of bytes; DataLossError for a truncated
    or corrupt file, or one compressed otherwise than compression_type says;
    IsADirectoryError for a directory (which the record reader would see as an
    empty file)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "a schedule file is expected, not a directory", path)
    reader = _core.RecordFileReader(path, compression_type or "")
    records = []
    while True:
        chunk = reader.read(1024)
        if not chunk:
            return records
        records.extend(t.numpy() for t in chunk)
