"""Loops over a MirroredStrategy's distributed dataset, eagerly and inside a
td.function (as TensorFlow's AutoGraph runs them): each element of the
dataset, a row of 4 numbers, is cut into two replicas' shares, and
`strategy.reduce('SUM', shares, axis=0)` adds them all up again."""

import pytest

import treadle as td

CPU = td.config.list_physical_devices("CPU")[0]
ROW_SUMS = [6, 22, 38]   # the rows of range(12) reshaped to (3, 4)


@pytest.fixture
def distributed():
    td.config.set_logical_device_configuration(CPU, [td.config.LogicalDeviceConfiguration()] * 2)

    def make():
        strategy = td.distribute.MirroredStrategy()
        dataset = td.data.Dataset.from_tensor_slices(td.reshape(td.range(12), (3, 4)))
        return strategy, strategy.experimental_distribute_dataset(dataset)

    yield make
    td.config.set_logical_device_configuration(CPU, None)


def single_var_loop(strategy, iterable):
    s = 0
    for shares in iterable:
        s = s * 10 + strategy.reduce("SUM", shares, axis=0)
    return s


def loop_with_break(strategy, iterable):
    s = 0
    for shares in iterable:
        e = strategy.reduce("SUM", shares, axis=0)
        if e > 20:
            break
        s = s * 10 + e
    return s


def loop_with_continue(strategy, iterable):
    s = 0
    for shares in iterable:
        e = strategy.reduce("SUM", shares, axis=0)
        if e == 22:
            continue
        s = s * 10 + e
    return s


def two_vars_loop(strategy, iterable):
    s, p = 0, 1
    for shares in iterable:
        e = strategy.reduce("SUM", shares, axis=0)
        s += e
        p *= e
    return s, p


def next_twice(strategy, iterable):
    iterator = iter(iterable)
    a = strategy.reduce("SUM", next(iterator), axis=0)
    b = strategy.reduce("SUM", next(iterator), axis=0)
    return a * 10 + b


def next_in_limited_loop(strategy, iterable, n):
    iterator = iter(iterable)
    s = 0
    for _ in n:
        s = s * 10 + strategy.reduce("SUM", next(iterator), axis=0)
    return s


CASES = [(single_var_loop, 858), (loop_with_break, 6), (loop_with_continue, 98), (two_vars_loop, (66, 6 * 22 * 38)),
         (next_twice, 82)]


@pytest.mark.parametrize("fn,want", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("wrap", ["eager", "td.function"])
@pytest.mark.parametrize("iterate", ["dataset", "iterator"])
def test_loops_agree_eagerly_and_traced(distributed, fn, want, wrap, iterate):
    if iterate == "iterator" and fn is next_twice:
        pytest.skip("iter() of an iterator is the iterator itself: covered by the dataset case")
    strategy, dataset = distributed()
    call = td.function(fn) if wrap == "td.function" else fn
    if iterate == "iterator":
        if wrap == "td.function":
            call = td.function(lambda s, d: fn(s, iter(d)))
        else:
            dataset = iter(dataset)
    got = call(strategy, dataset)
    got = tuple(int(g) for g in got) if isinstance(want, tuple) else int(got)
    assert got == want


@pytest.mark.parametrize("n", [0, 1, 2])
def test_next_in_a_loop_of_python_or_tensor_range(distributed, n):
    want = 0
    for k in range(n):
        want = want * 10 + ROW_SUMS[k]
    traced = td.function(next_in_limited_loop)
    for limit in (range(n), td.range(n)):
        strategy, dataset = distributed()
        assert int(traced(strategy, dataset, limit)) == want


def test_next_past_the_end_raises_out_of_range(distributed):
    strategy, dataset = distributed()

    def stopping(strategy, iterable, cond):
        iterator = iter(iterable)
        while cond:
            strategy.reduce("SUM", next(iterator), axis=0)

    with pytest.raises(td.errors.OutOfRangeError):
        td.function(stopping)(strategy, dataset, td.constant(True))


def test_a_distributed_dataset_argument_traces_once_per_element_spec(distributed):
    traced = td.function(single_var_loop)
    for _ in range(3):
        strategy, dataset = distributed()
        assert int(traced(strategy, dataset)) == 858
    # a new strategy object is a new trace; the same one reuses it
    strategy, dataset = distributed()
    traced(strategy, dataset)
    before = traced.experimental_get_tracing_count()
    traced(strategy, strategy.experimental_distribute_dataset(td.data.Dataset.from_tensor_slices(
        td.reshape(td.range(12, 24), (3, 4)))))
    assert traced.experimental_get_tracing_count() == before
