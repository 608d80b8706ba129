"""Datasets inside td.function, as the AutoGraph reference and the
tf.function guide use them: `for x in dataset` as a reduction (with break and
return), iter/next, and datasets as arguments with their own TraceType."""

import numpy as np
import pytest

import treadle as td

Dataset = td.data.Dataset


@td.function
def train(dataset):
    # the tf.function guide's loop over a dataset
    loss = td.constant(0)
    for x, y in dataset:
        loss += td.abs(y - x)
    return loss


def graph_size(f, *args):
    return len(f.get_concrete_function(*args).graph.operations)


def test_guide_loop_over_a_dataset_is_one_graph_loop():
    small_data = [(1, 1)] * 3
    big_data = [(1, 3)] * 10
    small = Dataset.from_generator(lambda: small_data, (td.int32, td.int32))
    big = Dataset.from_generator(lambda: big_data, (td.int32, td.int32))
    assert int(train(small)) == 0 and int(train(big)) == 20
    # a Python list is unrolled into the graph; a dataset is not
    assert graph_size(train, small_data) < graph_size(train, big_data)
    assert graph_size(train, small) == graph_size(train, big)
    # datasets with the same element_spec share one trace
    assert len(train.pretty_printed_concrete_signatures().split("\n\n")) == 3


def test_each_call_iterates_afresh_and_a_new_dataset_is_used():
    @td.function
    def total(ds):
        s = td.constant(0, dtype=td.int64)
        for x in ds:
            s += x
        return s

    ds = Dataset.range(5)
    assert int(total(ds)) == 10 and int(total(ds)) == 10
    assert int(total(Dataset.range(10))) == 45
    assert int(total(Dataset.range(0))) == 0
    shuffled = Dataset.range(20).shuffle(20).map(lambda x: x * 2)
    assert int(total(shuffled)) == 380


def test_break_and_return_in_a_dataset_loop():
    @td.function
    def sum_until(ds, limit):
        s = td.constant(0, dtype=td.int64)
        for x in ds:
            if x > limit:
                break
            s += x
        return s

    assert int(sum_until(Dataset.range(10), td.constant(3, td.int64))) == 6  # take_while, then reduce

    @td.function
    def find(ds, target):
        for x in ds:
            if x == target:
                return True
        return False

    assert bool(find(Dataset.range(10), td.constant(4, td.int64)))
    assert not bool(find(Dataset.range(3), td.constant(4, td.int64)))


def test_loop_over_a_dataset_the_function_closes_over():
    ds = Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(4)

    @td.function
    def f():
        s = td.constant(0.0)
        n = td.constant(0)
        for batch in ds.map(lambda b: b * 2.0):
            s += td.reduce_sum(batch)
            n += 1
        return s, n

    s, n = f()
    assert float(s) == 30.0 and int(n) == 2


def test_iter_and_next_inside_a_function():
    @td.function
    def f(ds):
        it = iter(ds)
        a = next(it)
        b = next(it)
        rest = td.constant(0, dtype=td.int64)
        for x in it:  # a While over the iterator, from where it is
            rest += x
        return a, b, rest

    a, b, rest = f(Dataset.range(5))
    assert (int(a), int(b), int(rest)) == (0, 1, 9)
    with pytest.raises(td.errors.OutOfRangeError, match="End of sequence"):
        f(Dataset.range(1))


def test_structured_elements_and_tensor_state():
    @td.function
    def f(ds):
        acc = td.zeros([3])
        for d in ds:
            acc += d["v"] * td.cast(d["w"], td.float32)
        return acc

    ds = Dataset.from_tensor_slices({"v": np.ones((4, 3), np.float32), "w": np.arange(4)})
    np.testing.assert_allclose(f(ds).numpy(), [6.0, 6.0, 6.0])


def test_eager_loops_are_python_loops():
    s = 0
    for x in Dataset.range(4):
        s += int(x)
    assert s == 6


def test_transforming_a_dataset_argument_inside_is_refused_clearly():
    @td.function
    def f(ds):
        return ds.map(lambda x: x)

    with pytest.raises(NotImplementedError, match="transform the dataset before passing it"):
        f(Dataset.range(3))


def test_dataset_trace_type():
    a = Dataset.range(3).__tf_tracing_type__(None)
    b = Dataset.range(7).__tf_tracing_type__(None)
    c = Dataset.from_tensor_slices([1.0]).__tf_tracing_type__(None)
    assert a == b and hash(a) == hash(b) and a != c
    assert a.is_subtype_of(b) and not a.is_subtype_of(c)


def test_reduce_inside_a_function():
    @td.function
    def f(ds):
        return ds.reduce(np.int64(0), lambda s, x: s + x)

    @td.function
    def g():
        return Dataset.range(5).map(lambda x: x * 2).reduce((np.int64(0), np.int64(0)),
                                                             lambda s, x: (s[0] + x, s[1] + 1))

    assert int(f(Dataset.range(5))) == 10 and int(f(Dataset.range(0))) == 0
    total, count = g()
    assert (int(total), int(count)) == (20, 5)


def test_reference_examples_print_what_tensorflow_prints(capfd):
    # the AutoGraph reference: a loop over a dataset, with and without break
    @td.function
    def f(ds):
        for x in ds:
            td.print(x)

    @td.function
    def g():
        for i in Dataset.range(10):
            if i > 3:
                break
            td.print(i)

    capfd.readouterr()
    f(Dataset.range(3))
    g()
    out, err = capfd.readouterr()
    assert (out + err).split() == ["0", "1", "2", "0", "1", "2", "3"]
