"""Dataset.cache(filename): TensorFlow's cache on disk."""

import os

import numpy as np
import pytest

import treadle as td

Dataset = td.data.Dataset


def _plain(v):
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    return v.tolist() if isinstance(v, np.ndarray) else v


def values(ds):
    return [_plain(v) for v in ds.as_numpy_iterator()]


def counting_dataset(calls, n=5):
    """range(n) mapped through Python, counting how often the input is read."""
    def bump(x):
        calls.append(int(x))
        return x
    return Dataset.range(n).map(lambda x: (td.py_function(bump, [x], td.int64), td.cast(x, td.float32) * 0.5,
                                           td.fill([x], x)))


def test_first_pass_writes_later_passes_read(tmp_path):
    calls = []
    prefix = str(tmp_path / "cache")
    ds = counting_dataset(calls).cache(prefix)
    first = values(ds)
    assert calls == [0, 1, 2, 3, 4]
    assert sorted(os.listdir(tmp_path)) == ["cache.data", "cache.index"]
    assert values(ds) == first and calls == [0, 1, 2, 3, 4]  # read from the files, not the input
    # another dataset with the same filename reads the same cache (TensorFlow's behaviour)
    other = counting_dataset(calls).cache(prefix)
    assert values(other) == first and calls == [0, 1, 2, 3, 4]
    assert int(ds.cardinality()) == 5 and ds.element_spec == counting_dataset([]).element_spec


def test_cache_of_batches_and_strings(tmp_path):
    ds = Dataset.from_tensor_slices((["a", "bb", "ccc"], [[1, 2], [3, 4], [5, 6]])).batch(2)
    cached = ds.cache(tmp_path / "c")  # a path object is accepted
    want = values(ds)
    assert values(cached) == want
    assert values(cached) == want
    assert values(Dataset.range(0).cache(str(tmp_path / "empty"))) == []
    assert values(Dataset.range(0).cache(str(tmp_path / "empty"))) == []


def test_a_partial_first_pass_leaves_no_cache(tmp_path):
    calls = []
    prefix = str(tmp_path / "cache")
    ds = counting_dataset(calls).cache(prefix)
    it = iter(ds)
    next(it), next(it)
    del it
    assert os.listdir(tmp_path) == []  # neither a cache nor its lockfile
    assert len(values(ds)) == 5 and calls == [0, 1, 0, 1, 2, 3, 4]
    assert values(ds.take(2)) == values(ds)[:2]  # take reads the finished cache
    assert calls == [0, 1, 0, 1, 2, 3, 4]


def test_a_failing_first_pass_leaves_no_cache(tmp_path):
    def check(x):
        if int(x) == 3:
            raise ValueError("element 3 is bad")
        return x
    ds = Dataset.range(5).map(lambda x: td.py_function(check, [x], td.int64)).cache(str(tmp_path / "c"))
    with pytest.raises(ValueError, match="element 3 is bad"):
        values(ds)
    assert os.listdir(tmp_path) == []


def test_two_writers_at_once_raise_already_exists(tmp_path):
    prefix = str(tmp_path / "cache")
    ds = Dataset.range(5).cache(prefix)
    first = iter(ds)
    assert int(next(first)) == 0
    second = iter(ds)
    with pytest.raises(td.errors.AlreadyExistsError, match="concurrent caching iterator.*lockfile"):
        next(second)
    assert [int(x) for x in first] == [1, 2, 3, 4]
    assert values(ds) == [0, 1, 2, 3, 4]
    assert sorted(os.listdir(tmp_path)) == ["cache.data", "cache.index"]


def _write_cache(tmp_path, n=6):
    prefix = str(tmp_path / "cache")
    ds = Dataset.range(n).map(lambda x: (x, td.fill([3], td.cast(x, td.float32)))).cache(prefix)
    values(ds)
    return prefix, ds


def test_truncated_cache_is_data_loss(tmp_path):
    prefix, ds = _write_cache(tmp_path)
    data = open(prefix + ".data", "rb").read()
    with open(prefix + ".data", "wb") as f:
        f.write(data[:len(data) - 7])  # inside the last record
    with pytest.raises(td.errors.DataLossError, match="cache.data"):
        values(ds)
    record = len(data) // 6
    with open(prefix + ".data", "wb") as f:
        f.write(data[:record * 4])  # at a record's end: fewer elements than the index says
    with pytest.raises(td.errors.DataLossError, match="holds 4 elements, but its index says 6"):
        values(ds)


def test_corrupt_cache_is_data_loss(tmp_path):
    prefix, ds = _write_cache(tmp_path)
    data = bytearray(open(prefix + ".data", "rb").read())
    data[30] ^= 0xFF
    open(prefix + ".data", "wb").write(bytes(data))
    with pytest.raises(td.errors.DataLossError, match="checksum"):
        values(ds)
    open(prefix + ".index", "wb").write(b"\x00" * 40)
    with pytest.raises(td.errors.DataLossError, match="cache.index"):
        values(ds)


def test_cache_of_another_structure_is_refused(tmp_path):
    prefix, _ = _write_cache(tmp_path)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"holds elements of dtypes \(int64, float32\)"):
        values(Dataset.range(3).cache(prefix))


def test_cache_of_other_shapes_is_refused(tmp_path):
    """Same dtypes, other shapes: refused as TensorFlow's iterator refuses an
    element whose shape contradicts its output shapes (found by fuzzing)."""
    prefix, _ = _write_cache(tmp_path)  # (int64 scalar, float32 [3])
    other = Dataset.range(2).map(lambda x: (x, td.fill([2], td.cast(x, td.float32))))
    with pytest.raises(td.errors.InvalidArgumentError,
                       match=r"element 0 .* component 1 of shape \[3\], but this dataset's elements have shape \(2,\)"):
        values(other.cache(prefix))
    vectors = Dataset.range(2).map(lambda x: (td.fill([2], x), td.fill([3], td.cast(x, td.float32))))
    with pytest.raises(td.errors.InvalidArgumentError, match=r"component 0 of shape \[\]"):
        values(vectors.cache(prefix))
    # A dataset whose spec leaves the dimension unknown reads it.
    unknown = Dataset.from_generator(lambda: iter([]), output_signature=(td.TensorSpec([], td.int64),
                                                                         td.TensorSpec([None], td.float32)))
    assert values(unknown.cache(prefix)) == [(i, [float(i)] * 3) for i in range(6)]


def test_nul_in_the_filename_is_refused(tmp_path):
    with pytest.raises(ValueError, match="null byte"):
        values(Dataset.range(3).cache(str(tmp_path / "a\0b")))
