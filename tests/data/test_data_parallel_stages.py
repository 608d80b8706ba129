"""interleave and batch with num_parallel_calls: C++ threads, TensorFlow's
orders when deterministic, errors at their element's place, cardinality;
td.py_function inside a parallel map."""

import threading
import traceback

import numpy as np
import pytest

import treadle as td

Dataset = td.data.Dataset


def values(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds.as_numpy_iterator()]


def sequential_interleave(inputs, make, cycle, block):
    """TensorFlow's documented interleave order, written out plainly."""
    inputs = iter(inputs)
    slots, at, taken, end = [None] * cycle, 0, 0, False
    out = []
    while not end or any(s is not None for s in slots):
        if slots[at] is None:
            if not end:
                x = next(inputs, None)
                if x is None:
                    end = True
                else:
                    slots[at] = iter(make(x))
                    continue
            at, taken = (at + 1) % cycle, 0
            continue
        v = next(slots[at], None)
        if v is None:
            slots[at] = None
            at, taken = (at + 1) % cycle, 0
            continue
        out.append(v)
        taken += 1
        if taken == block:
            at, taken = (at + 1) % cycle, 0
    return out


@pytest.mark.parametrize("cycle,block,threads", [(1, 1, 1), (2, 1, 2), (3, 2, 2), (4, 3, 3), (5, 1, td.data.AUTOTUNE)])
def test_parallel_interleave_keeps_tensorflows_order(cycle, block, threads):
    # inner datasets of different lengths, some empty: slots end at different times
    lengths = [3, 0, 5, 1, 4, 0, 2, 6, 1]
    expected = sequential_interleave(range(len(lengths)), lambda i: [i * 100 + k for k in range(lengths[i])],
                                     cycle, block)
    lens = td.constant(np.array(lengths, np.int64))

    def inner(i):
        return Dataset.range(td.gather(lens, i)).map(lambda k: i * 100 + k)

    for parallel in (None, threads):
        ds = Dataset.range(len(lengths)).interleave(inner, cycle_length=cycle, block_length=block,
                                                    num_parallel_calls=parallel)
        assert values(ds) == expected
        assert values(ds) == expected  # a second iteration starts over
        assert int(ds.cardinality()) == td.data.UNKNOWN_CARDINALITY


def test_non_deterministic_interleave_yields_every_element_once():
    ds = Dataset.range(6).interleave(lambda i: Dataset.range(i * 10, i * 10 + 7), cycle_length=3,
                                     num_parallel_calls=3, deterministic=False)
    got = values(ds)
    assert sorted(got) == sorted(i * 10 + k for i in range(6) for k in range(7))
    # within one inner dataset the order is kept
    for i in range(6):
        mine = [v for v in got if v // 10 == i]
        assert mine == sorted(mine)


def test_parallel_interleave_of_record_files(tmp_path):
    from treadle import _core
    paths = []
    for f in range(4):
        paths.append(str(tmp_path / f"f{f}.tfrecord"))
        _core.write_record_file(paths[-1], [f"{f}-{r}".encode() for r in range(f + 2)], "GZIP" if f % 2 else "")
    ds = Dataset.from_tensor_slices(paths).interleave(
        lambda p: td.data.TFRecordDataset(p, compression_type=None), cycle_length=2, num_parallel_calls=2)
    plain = [p for i, p in enumerate(paths) if i % 2 == 0]
    ds = Dataset.from_tensor_slices(plain).interleave(td.data.TFRecordDataset, cycle_length=2, num_parallel_calls=2)
    expected = sequential_interleave([0, 2], lambda f: [f"{f}-{r}".encode() for r in range(f + 2)], 2, 1)
    assert values(ds) == expected


def test_error_in_an_inner_dataset_comes_at_its_place():
    def check(x):
        if int(x) == 23:
            raise ValueError("element 23 is bad")
        return x

    def inner(i):
        return Dataset.range(i * 10, i * 10 + 4).map(lambda x: td.py_function(check, [x], td.int64))

    expected = sequential_interleave(range(4), lambda i: range(i * 10, i * 10 + 4), 2, 1)
    before = expected[:expected.index(23)]
    for parallel in (None, 2):
        ds = Dataset.range(4).interleave(inner, cycle_length=2, num_parallel_calls=parallel)
        got = []
        with pytest.raises(ValueError, match="element 23 is bad"):
            for x in ds:
                got.append(int(x))
        assert got == before


def test_error_in_map_func_and_in_the_input():
    def bad(i):
        if int(i) == 2:
            raise RuntimeError("no dataset for 2")
        return Dataset.from_tensors(i)

    with pytest.raises(RuntimeError, match="no dataset for 2"):
        values(Dataset.range(4).interleave(bad, cycle_length=1, num_parallel_calls=1))
    with pytest.raises(TypeError, match="must return a td.data.Dataset"):
        values(Dataset.range(4).interleave(lambda i: i, cycle_length=2, num_parallel_calls=2))
    with pytest.raises(td.errors.InvalidArgumentError, match="cycle_length"):
        Dataset.range(4).interleave(lambda i: Dataset.from_tensors(i), cycle_length=0, num_parallel_calls=2)


def test_parallel_interleave_drops_its_threads_when_abandoned():
    ds = Dataset.range(1000).interleave(lambda i: Dataset.range(100), cycle_length=4, num_parallel_calls=4)
    for _ in range(20):
        it = iter(ds)
        next(it)
        del it
    assert threading.active_count() < 10


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("threads", [2, 3, td.data.AUTOTUNE])
def test_parallel_batch_matches_batch(drop, threads):
    base = Dataset.from_tensor_slices((np.arange(53, dtype=np.float32), np.arange(53) * 2)).map(lambda a, b: (a, b))
    seq = base.batch(7, drop_remainder=drop)
    par = base.batch(7, drop_remainder=drop, num_parallel_calls=threads)
    got, want = values(par), values(seq)
    assert len(got) == len(want) == (53 // 7 if drop else 53 // 7 + 1)
    for (a, b), (c, d) in zip(got, want):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    assert int(par.cardinality()) == int(seq.cardinality())
    assert par.element_spec == seq.element_spec
    assert int(Dataset.range(10).repeat().batch(3, num_parallel_calls=2).cardinality()) == \
        td.data.INFINITE_CARDINALITY


def test_non_deterministic_batch_keeps_every_element():
    got = values(Dataset.range(100).batch(8, num_parallel_calls=4, deterministic=False))
    assert sorted(v for b in got for v in b) == list(range(100))
    assert sorted(len(b) for b in got) == [4] + [8] * 12


def test_parallel_batch_error_in_the_middle():
    def check(x):
        if int(x) == 13:
            raise ValueError("element 13 is bad")
        return x

    ds = Dataset.range(30).map(lambda x: td.py_function(check, [x], td.int64)).batch(4, num_parallel_calls=3)
    got = []
    with pytest.raises(ValueError, match="element 13 is bad"):
        for b in ds:
            got.append(b.numpy().tolist())
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    # components of different shapes cannot be stacked: TensorFlow's message
    ds = Dataset.from_generator(lambda: iter([[1], [2], [3, 4]]), output_signature=td.TensorSpec([None], td.int32))
    with pytest.raises(td.errors.InvalidArgumentError, match="Cannot batch tensors with different shapes"):
        values(ds.batch(3, num_parallel_calls=2))


# ---------------------------------------------------------------- py_function in a parallel map
def test_py_function_in_a_parallel_map_runs_python_per_element():
    seen = set()
    lock = threading.Lock()

    def square(x):
        with lock:
            seen.add(threading.get_ident())
        return x.numpy() ** 2

    ds = Dataset.range(200).map(lambda x: td.py_function(square, [x], td.int64) + 1, num_parallel_calls=4)
    assert values(ds) == [i * i + 1 for i in range(200)]
    assert threading.get_ident() not in seen  # called from the map's C++ threads, each taking the GIL
    unordered = Dataset.range(200).map(lambda x: td.py_function(square, [x], td.int64), num_parallel_calls=4,
                                       deterministic=False)
    assert sorted(values(unordered)) == [i * i for i in range(200)]


def test_py_function_error_in_a_parallel_map_keeps_its_traceback():
    def inner_helper(x):
        raise KeyError(f"missing {int(x)}")

    def lookup(x):
        if int(x) == 7:
            inner_helper(x)
        return x

    ds = Dataset.range(20).map(lambda x: td.py_function(lookup, [x], td.int64), num_parallel_calls=3)
    got = []
    with pytest.raises(KeyError, match="missing 7") as info:
        for x in ds:
            got.append(int(x))
    assert got == list(range(7))
    frames = "".join(traceback.format_tb(info.value.__traceback__))
    assert "inner_helper" in frames and "lookup" in frames
