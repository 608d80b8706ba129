"""File sources: TFRecordDataset (records read and decompressed in C++) and
list_files."""

import glob
import os

import numpy as np

from treadle import _core, errors
from treadle.data.dataset_ops import Dataset, as_count
from treadle.data.interleave import InterleaveDataset
from treadle.framework import dtypes
from treadle.framework.tensor import Tensor
from treadle.framework.tensor_spec import TensorSpec



def _compression(compression_type):
    if compression_type is None:
        return ""
    if isinstance(compression_type, Tensor):
        compression_type = compression_type.numpy()
    if isinstance(compression_type, bytes):
        compression_type = compression_type.decode()
    if not isinstance(compression_type, str) or compression_type not in ("", "NONE", "GZIP", "ZLIB"):
        raise ValueError(f"compression_type must be None, '', 'GZIP' or 'ZLIB', got {compression_type!r}")
    return compression_type


def _filenames(filenames):
    """A Dataset of string scalars from a name, a list of names, a string tensor or a Dataset."""
    if isinstance(filenames, Dataset):
        spec = filenames.element_spec
        if not isinstance(spec, TensorSpec) or spec.dtype != dtypes.string or spec.shape.rank != 0:
            raise TypeError(f"TFRecordDataset: a dataset of file names must have string scalar elements, got {spec}")
        return filenames
    return Dataset.from_tensor_slices(np.array(_name_list(filenames), dtype=object))


def _name_list(filenames):
    """File names given as a name, a list of names or a string tensor, as bytes."""
    if isinstance(filenames, Tensor):
        filenames = filenames.numpy()
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    names = [os.fsencode(n) if not isinstance(n, bytes) else n for n in np.asarray(filenames, dtype=object).ravel()]
    if not names:
        raise errors.InvalidArgumentError(None, None, "TFRecordDataset: `filenames` is empty")
    return names


class _OneFileDataset(Dataset):
    """One file's records: a C++ stage, so interleave's threads read it without the GIL."""

    _spec = TensorSpec([], dtypes.string)

    def __init__(self, path, compression):
        self._path = path
        self._compression = compression

    def _cpp_stage(self):
        return _core.data_records([self._path], self._compression)


class TFRecordDataset(Dataset):
    """The records of TFRecord files, each a string scalar, file after file
    (or `num_parallel_reads` files interleaved record by record, as TensorFlow
    does). compression_type None/'' , 'GZIP' or 'ZLIB'; a file compressed
    otherwise is refused with a message naming the compression it has."""

    _spec = TensorSpec([], dtypes.string)

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        self._compression = _compression(compression_type)
        files = _filenames(filenames)
        compression = self._compression
        # A fixed list of files read one after the other is a C++ stage.
        self._paths = None
        if not isinstance(filenames, Dataset) and num_parallel_reads in (None, 1):
            self._paths = [os.fsdecode(n) for n in _name_list(filenames)]

        def read(name):
            path = name.numpy()
            return _OneFileDataset(os.fsdecode(path), compression)

        cycle = 1 if num_parallel_reads is None else as_count(num_parallel_reads, "num_parallel_reads")
        if cycle == -1:
            cycle = max(1, os.cpu_count() or 1)
        if cycle < 1:
            raise ValueError(f"num_parallel_reads must be positive or td.data.AUTOTUNE, got {cycle}")
        # Several files at once are read ahead on C++ threads, one per file of the cycle.
        self._records = InterleaveDataset(files, read, cycle, 1, num_parallel_calls=cycle if cycle > 1 else None,
                                          element_spec=self._spec)

    def _cpp_stage(self):
        if self._paths is None:
            return self._records._stage()
        return _core.data_records(self._paths, self._compression)


def list_files(file_pattern, shuffle=None, seed=None):
    """The files matching the glob pattern(s), as string scalars; shuffled
    unless shuffle=False (then sorted). InvalidArgumentError when none match."""
    patterns = file_pattern.numpy() if isinstance(file_pattern, Tensor) else file_pattern
    if isinstance(patterns, (str, bytes, os.PathLike)):
        patterns = [patterns]
    matches = sorted({os.fsencode(m) for p in np.asarray(patterns, dtype=object).ravel()
                      for m in glob.glob(os.fsdecode(p))})
    if not matches:
        raise errors.InvalidArgumentError(None, None, f"list_files: no files match the pattern(s) "
                                                      f"{[os.fsdecode(p) for p in np.asarray(patterns, dtype=object).ravel()]}")
    files = Dataset.from_tensor_slices(np.array(matches, dtype=object))
    if shuffle is None or shuffle:
        files = files.shuffle(len(matches), seed=seed)
    return files


def write_tfrecord_file(path, records, compression_type=None):
    """Writes `records` (bytes, or string scalar tensors) as a TFRecord file."""
    data = []
    for r in records:
        if isinstance(r, Tensor):
            r = r.numpy()
        if not isinstance(r, (bytes, bytearray, memoryview)):
            raise TypeError(f"write_tfrecord_file: records must be bytes, got {type(r).__name__}")
        data.append(bytes(r))
    _core.write_record_file(os.fspath(path), data, _compression(compression_type))
