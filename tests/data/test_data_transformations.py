"""td.data transformations against tf.data's documented behaviour and examples."""

import threading

import numpy as np
import pytest

import treadle as td

Dataset = td.data.Dataset


def values(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds.as_numpy_iterator()]


def test_map_examples():
    assert values(Dataset.range(1, 6).map(lambda x: x + 1)) == [2, 3, 4, 5, 6]
    # a tuple element is unpacked into arguments; a dict is passed whole
    ds = Dataset.from_tensor_slices(([1, 2], [3, 4])).map(lambda a, b: a * b)
    assert values(ds) == [3, 8]
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": [10, 20]}).map(lambda d: d["a"] + d["b"])
    assert values(ds) == [11, 22]
    # Python constants in the result become tensors; structures are kept
    ds = Dataset.range(2).map(lambda x: (x, {"twice": x * 2, "one": 1}))
    assert values(ds)[1] == (1, {"one": 1, "twice": 2})
    assert ds.element_spec[1]["one"] == td.TensorSpec([], td.int32)


def test_map_is_traced_once_into_a_graph():
    traces = []

    def fn(x):
        traces.append(1)  # Python side effects run while tracing only
        return x * 2

    ds = Dataset.range(5).map(fn)
    assert values(ds) == [0, 2, 4, 6, 8] and values(ds) == [0, 2, 4, 6, 8]
    assert len(traces) == 1


def test_map_with_autograph_control_flow():
    def fn(x):
        if x % 2 == 0:
            x = x * 10
        return x

    assert values(Dataset.range(4).map(fn)) == [0, 1, 20, 3]


def test_map_py_function():
    def upper(s):
        return td.constant(s.numpy().decode().upper())

    ds = Dataset.from_tensor_slices(["ab", "cd"]).map(lambda s: td.py_function(upper, [s], td.string))
    assert values(ds) == [b"AB", b"CD"]


def test_map_captures_variables():
    v = td.Variable(3, dtype=td.int64)
    ds = Dataset.range(3).map(lambda x: x + v)
    assert values(ds) == [3, 4, 5]
    v.assign(10)
    assert values(ds) == [10, 11, 12]


@pytest.mark.parametrize("calls", [2, 4, td.data.AUTOTUNE])
def test_parallel_map_keeps_order_and_runs_on_threads(calls):
    seen = set()

    def record(x):
        seen.add(threading.get_ident())
        return x

    ds = Dataset.range(50).map(lambda x: td.py_function(record, [x * x], td.int64), num_parallel_calls=calls)
    assert values(ds) == [i * i for i in range(50)]
    assert threading.get_ident() not in seen  # the map's own threads ran it


def test_parallel_map_nondeterministic_keeps_elements():
    ds = Dataset.range(100).map(lambda x: x * 3, num_parallel_calls=4, deterministic=False)
    assert sorted(values(ds)) == [i * 3 for i in range(100)]


def test_filter():
    assert values(Dataset.from_tensor_slices([1, 2, 3]).filter(lambda x: x < 3)) == [1, 2]
    ds = Dataset.from_tensor_slices([1, 2, 3]).filter(lambda x: td.math.equal(x, 1))
    assert values(ds) == [1]
    with pytest.raises(ValueError, match="predicate"):
        Dataset.range(3).filter(lambda x: x)


def test_batch_and_remainder():
    assert values(Dataset.range(8).batch(3)) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    ds = Dataset.range(8).batch(3, drop_remainder=True)
    assert values(ds) == [[0, 1, 2], [3, 4, 5]]
    assert ds.element_spec == td.TensorSpec([3], td.int64)
    assert Dataset.range(8).batch(3).element_spec == td.TensorSpec([None], td.int64)
    strings = Dataset.from_tensor_slices(["a", "b", "c"]).batch(2)
    assert values(strings) == [[b"a", b"b"], [b"c"]]
    with pytest.raises(td.errors.InvalidArgumentError, match="greater than zero"):
        Dataset.range(3).batch(0)


def test_batch_of_different_shapes_fails_at_that_batch():
    ds = Dataset.range(1, 4).map(lambda x: td.fill([x], x)).batch(2)
    with pytest.raises(td.errors.InvalidArgumentError, match="Cannot batch tensors with different shapes"):
        values(ds)


def test_padded_batch_examples():
    ds = Dataset.range(1, 5).map(lambda x: td.fill([x], x))
    out = values(ds.padded_batch(2))
    assert out == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    out = values(ds.padded_batch(2, padded_shapes=5))
    assert out[0] == [[1, 0, 0, 0, 0], [2, 2, 0, 0, 0]]
    out = values(ds.padded_batch(2, padded_shapes=[None], padding_values=np.int64(-1)))
    assert out[1] == [[3, 3, 3, -1], [4, 4, 4, 4]]
    with pytest.raises(td.errors.InvalidArgumentError, match="padded shape"):
        values(ds.padded_batch(2, padded_shapes=[3]))
    pairs = Dataset.zip((ds, ds.map(lambda x: td.strings.as_string(x) if hasattr(td, "strings") else x)))
    assert len(values(pairs.padded_batch(3, drop_remainder=True))) == 1


def test_unbatch():
    ds = Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6]]).unbatch()
    assert values(ds) == [1, 2, 3, 4, 5, 6]
    ds = Dataset.from_tensors(([1, 2], ["a", "b"])).unbatch()
    assert values(ds) == [(1, b"a"), (2, b"b")]
    assert values(Dataset.range(7).batch(3).unbatch()) == list(range(7))


def test_shuffle_is_a_permutation_within_the_buffer_window():
    out = values(Dataset.range(100).shuffle(10, seed=1))
    assert sorted(out) == list(range(100)) and out != list(range(100))
    # the buffer holds 10 elements: the k-th output comes from the first k+10 inputs
    assert all(v < k + 10 for k, v in enumerate(out))
    # buffer_size 1 keeps the order
    assert values(Dataset.range(20).shuffle(1)) == list(range(20))


def test_shuffle_seeds_and_reshuffle_each_iteration():
    a = Dataset.range(50).shuffle(50, seed=7)
    b = Dataset.range(50).shuffle(50, seed=7)
    first, second = values(a), values(a)
    assert first != second  # reshuffled each iteration...
    assert values(b) == first and values(b) == second  # ...but reproducibly for the seed
    c = Dataset.range(50).shuffle(50, seed=7, reshuffle_each_iteration=False)
    assert values(c) == values(c)
    d = Dataset.range(50).shuffle(50, reshuffle_each_iteration=False)  # no seed: one random order
    assert values(d) == values(d)
    # repeat() after shuffle reshuffles in each epoch (TensorFlow's example)
    epochs = values(Dataset.range(10).shuffle(10, seed=3).repeat(2))
    assert sorted(epochs[:10]) == sorted(epochs[10:]) == list(range(10)) and epochs[:10] != epochs[10:]
    with pytest.raises(td.errors.InvalidArgumentError):
        Dataset.range(3).shuffle(0)


def test_shuffle_follows_the_global_seed():
    td.random.set_seed(11)
    first = values(Dataset.range(30).shuffle(30))
    td.random.set_seed(11)
    second = values(Dataset.range(30).shuffle(30))
    td.random.set_seed(None)
    assert first == second


def test_repeat_take_skip():
    assert values(Dataset.from_tensor_slices([1, 2, 3]).repeat(3)) == [1, 2, 3] * 3
    assert values(Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert values(Dataset.range(10).take(3)) == [0, 1, 2]
    assert values(Dataset.range(10).take(-1)) == list(range(10))
    assert values(Dataset.range(10).skip(7)) == [7, 8, 9]
    assert values(Dataset.range(10).skip(-1)) == []
    assert values(Dataset.range(0).repeat()) == []  # empty forever is empty, not a hang


def test_cache_in_memory():
    calls = []

    def count(x):
        calls.append(int(x))
        return x

    ds = Dataset.range(5).map(lambda x: td.py_function(count, [x], td.int64)).cache()
    assert values(ds) == list(range(5)) and values(ds) == list(range(5))
    assert calls == list(range(5))  # the second pass read the cache
    partial = Dataset.range(5).map(lambda x: td.py_function(count, [x], td.int64)).cache()
    calls.clear()
    next(iter(partial))
    values(partial)  # a partial first pass keeps nothing
    assert calls == [0, 0, 1, 2, 3, 4]


def test_prefetch_examples():
    assert values(Dataset.range(3).prefetch(2)) == [0, 1, 2]
    assert values(Dataset.range(30).map(lambda x: x * 2).prefetch(td.data.AUTOTUNE)) == list(range(0, 60, 2))
    assert values(Dataset.range(3).prefetch(0)) == [0, 1, 2]


def test_prefetch_runs_ahead_in_another_thread_and_stops_when_dropped():
    threads = []

    def record(x):
        threads.append(threading.get_ident())
        return x

    ds = Dataset.range(1000).map(lambda x: td.py_function(record, [x], td.int64)).prefetch(2)
    it = iter(ds)
    assert int(next(it)) == 0
    assert threading.get_ident() not in threads  # the pipeline ran in the prefetch thread
    del it  # stops (and joins) the prefetch thread
    # it ran at most the buffer (2) and the element in hand (1) ahead of the one consumed
    assert len(threads) <= 4
    n = len(threads)
    threading.Event().wait(0.05)
    assert len(threads) == n


def test_prefetch_of_a_python_stage_and_map_over_it():
    def gen():
        yield from range(5)

    ds = Dataset.from_generator(gen, output_signature=td.TensorSpec([], td.int64)).prefetch(3).map(lambda x: x * 3)
    assert values(ds) == [0, 3, 6, 9, 12]
    assert values(ds.shuffle(2, seed=1).prefetch(1).batch(2).prefetch(1)).__len__() == 3


def test_interleave_example():
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2,
                                        block_length=4)
    assert values(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    ds = Dataset.range(1, 4).interleave(lambda x: Dataset.range(x), cycle_length=2)
    assert values(ds) == [0, 0, 1, 0, 1, 2]


def test_enumerate():
    ds = Dataset.from_tensor_slices([1, 2, 3]).enumerate(start=5)
    assert values(ds) == [(5, 1), (6, 2), (7, 3)]
    assert ds.element_spec[0].dtype == td.int64


def test_take_while():
    assert values(Dataset.range(10).take_while(lambda x: x < 5)) == [0, 1, 2, 3, 4]


def test_scan():
    ds = Dataset.range(10).scan(np.int64(0), lambda state, i: (state + i, state + i))
    assert values(ds) == [0, 1, 3, 6, 10, 15, 21, 28, 36, 45]


def test_scan_relaxes_a_growing_state():
    ds = Dataset.range(4).scan(td.constant([], dtype=td.int64),
                               lambda s, x: (td.concat([s, td.reshape(x, [1])], 0), td.size(s)))
    assert values(ds) == [0, 1, 2, 3]


def test_reduce():
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, _: s + 1)) == 5
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10
    pair = Dataset.range(4).reduce((np.int64(0), np.int64(1)), lambda s, x: (s[0] + x, s[1] * (x + 1)))
    assert int(pair[0]) == 6 and int(pair[1]) == 24
    with pytest.raises(td.errors.InvalidArgumentError, match="infinite"):
        Dataset.range(3).repeat().reduce(np.int64(0), lambda s, x: s + x)


def test_apply():
    def dataset_fn(ds):
        return ds.filter(lambda x: x < 5)

    assert values(Dataset.range(100).apply(dataset_fn)) == [0, 1, 2, 3, 4]
    with pytest.raises(TypeError):
        Dataset.range(3).apply(lambda ds: 3)


def test_element_spec_through_a_pipeline():
    ds = Dataset.from_tensor_slices(np.zeros((10, 3), np.float32)).map(lambda x: (x, td.reduce_sum(x))).batch(4)
    assert ds.element_spec == (td.TensorSpec([None, 3], td.float32), td.TensorSpec([None], td.float32))


def test_parallel_map_over_a_python_stage_and_dropped_early():
    def gen():
        yield from range(30)

    src = Dataset.from_generator(gen, output_signature=td.TensorSpec([], td.int64))
    ds = src.map(lambda x: x + 1, num_parallel_calls=3).prefetch(2)
    assert values(ds) == list(range(1, 31))
    it = iter(Dataset.range(10**6).map(lambda x: x * 2, num_parallel_calls=4))
    assert [int(next(it)) for _ in range(5)] == [0, 2, 4, 6, 8]
    del it  # joins the map's threads, which were at most 8 elements ahead


def test_parallel_map_error_ends_the_stage():
    def check(x):
        if int(x) == 7:
            raise ValueError("seven")
        return x

    it = iter(Dataset.range(20).map(lambda x: td.py_function(check, [x], td.int64), num_parallel_calls=4))
    assert [int(next(it)) for _ in range(7)] == list(range(7))
    with pytest.raises(ValueError, match="seven"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_parallel_map_with_a_huge_parallelism_is_bounded():
    ds = Dataset.range(10).map(lambda x: x + 1, num_parallel_calls=10**9)
    assert values(ds) == list(range(1, 11))
    with pytest.raises(ValueError, match="num_parallel_calls"):
        Dataset.range(3).map(lambda x: x, num_parallel_calls=0)


def test_unbatch_of_ragged_first_dimensions_fails_at_that_element():
    def gen():
        yield np.arange(2), np.arange(2)
        yield np.arange(3), np.arange(2)

    ds = Dataset.from_generator(gen, output_signature=(td.TensorSpec([None], td.int64),
                                                       td.TensorSpec([None], td.int64))).unbatch()
    it = iter(ds)
    assert [tuple(int(v) for v in next(it)) for _ in range(2)] == [(0, 0), (1, 1)]
    with pytest.raises(td.errors.InvalidArgumentError, match="first dimensions differ"):
        next(it)
    with pytest.raises(ValueError, match="scalar"):
        Dataset.range(3).unbatch()


def test_many_maps_do_not_warn_of_functions_made_in_a_loop():
    """td.data makes one td.function per map/filter by design: five datasets
    are not "a td.function created again and again" (issue 16's note)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(7):
            ds = td.data.Dataset.range(3).map(lambda x: x * 2).filter(lambda x: x >= 0)
            assert [int(v) for v in ds] == [0, 2, 4]
