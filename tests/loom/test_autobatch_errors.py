"""td.loom.autobatch: shared sub-results computed once, batched launches
against their lower bound, and the errors of mismatched outputs, of
exceptions in the function and of values used across examples."""

import traceback

import numpy as np
import pytest

import treadle as td
from treadle.loom.autobatch import CrossExampleError, launch_counts

W = td.Variable(np.array([[0.5, -1.0], [2.0, 0.25]]))


@td.function
def cell_a(x):
    return td.tanh(td.matmul(td.reshape(x, [1, 2]), W)[0])


@td.function
def cell_b(x):
    return td.sigmoid(x) * 2.0


def test_shared_sub_result_is_computed_once():
    def fn(x):
        a = cell_a(td.constant(np.asarray(x)))
        return cell_b(a) + cell_a(a)  # a feeds two cells: one node computes it

    xs = [[1.0, 2.0], [-0.5, 0.3], [0.0, 1.0]]
    batched = td.loom.autobatch(fn)
    out = batched(xs)
    stats = batched.last_stats
    assert len(stats) == 1 and stats[0]["nodes"] == 4 * len(xs)  # cell_a twice, cell_b, the add
    w = W.numpy()
    for k, x in enumerate(xs):
        a = np.tanh(np.asarray(x) @ w)
        np.testing.assert_allclose(out.numpy()[k], 2 / (1 + np.exp(-a)) + np.tanh(a @ w), rtol=1e-12)


def test_launch_counts_against_the_lower_bound():
    # a chain of cell_a calls beside a chain of alternating cells: depth order launches
    # one op per cell kind per depth; the bound is the longest chain.
    def fn(n):
        x = td.constant(np.ones(2))
        for k in range(n):
            x = cell_a(x) if k % 2 == 0 or n == 3 else cell_b(x)
        return x

    batched = td.loom.autobatch(fn)
    batched.count_launches = True
    batched([3, 4, 2])
    stats = batched.last_stats[0]
    assert stats["lower_bound"] == 4
    assert stats["lower_bound"] <= stats["agenda"] <= stats["depth"]
    assert stats["default"] == stats["depth"]


def test_launch_counts_of_a_small_graph():
    # node 0 and 1 (op 0) feed 2 (op 1) which feeds 3 (op 0); 4 (op 0) is alone.
    counts = launch_counts([0, 0, 1, 0, 0], [0, 0, 0, 2, 3, 3], [0, 0, 0], [0, 1, 2])
    assert counts == {"nodes": 5, "lower_bound": 3, "depth": 3, "agenda": 3, "default": 3}


def test_mismatched_structures_name_the_example():
    def fn(x):
        y = cell_b(td.constant(np.asarray(x)))
        return (y, y) if x[0] < 5 else y

    with pytest.raises(TypeError, match="example 2"):
        td.loom.autobatch(fn)([[1.0, 1.0], [2.0, 2.0], [7.0, 0.0]])


def test_mismatched_shapes_name_the_example():
    def fn(n):
        return cell_b(td.constant(np.ones(n)))

    with pytest.raises(ValueError, match=r"output 0 of example 1 has dtype float64 and shape \(3,\)"):
        td.loom.autobatch(fn)([2, 3, 2])


def test_exception_in_fn_keeps_its_traceback_and_names_the_example():
    def fn(x):
        y = cell_b(td.constant(np.asarray(x)))
        if float(td.reduce_sum(y)) > 3.0:
            raise KeyError("too big")
        return y

    with pytest.raises(KeyError) as info:
        td.loom.autobatch(fn)([[0.0, 0.0], [5.0, 5.0], [0.1, 0.1]])
    assert any("example 1" in note for note in info.value.__notes__)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "fn"


def test_value_of_one_example_used_by_another():
    kept = []

    def fn(x):
        y = cell_b(td.constant(np.asarray(x)))
        if kept:
            return y + kept[0]
        kept.append(y)
        return y

    with pytest.raises(CrossExampleError, match="example 0 is used by example 1"):
        td.loom.autobatch(fn)([[0.0, 0.0], [1.0, 1.0]])
    assert issubclass(CrossExampleError, ValueError)


def test_value_of_one_example_passed_to_a_cell_by_another():
    kept = []

    def fn(x):
        y = cell_b(td.constant(np.asarray(x)))
        kept.append(y)
        return cell_b(kept[0])

    with pytest.raises(CrossExampleError, match="example 0 is used by example 1"):
        td.loom.autobatch(fn)([[0.0, 0.0], [1.0, 1.0]])


def test_value_read_after_the_call():
    kept = []

    def fn(x):
        y = cell_b(td.constant(np.asarray(x)))
        kept.append(y)
        return y

    td.loom.autobatch(fn)([[0.0, 0.0]])
    with pytest.raises(ValueError, match=r"used \(op StridedSlice\) after the autobatched call returned"):
        float(kept[0][0])
    with pytest.raises(ValueError, match="read after the autobatched call returned"):
        kept[0].numpy()


def test_value_read_outside_the_function_while_recording():
    kept = []

    def fn(x):
        y = cell_b(td.constant(np.asarray(x)))
        kept.append(y)
        return y

    def examples():  # examples are drawn as the batch records: this one reads example 0's value meanwhile
        yield [0.0, 0.0]
        yield [float(kept[0][0]), 1.0]

    with pytest.raises(ValueError, match="example 0 is used outside the per-example function"):
        td.loom.autobatch(fn)(examples())

    def reading_examples():
        yield [0.0, 0.0]
        yield kept[-1].numpy()

    with pytest.raises(ValueError, match="value of example 0 is read outside the per-example function"):
        td.loom.autobatch(fn)(reading_examples())


def test_not_a_function():
    with pytest.raises(TypeError, match="takes a function"):
        td.loom.autobatch(3)


def test_no_examples():
    with pytest.raises(ValueError, match="no examples"):
        td.loom.autobatch(lambda x: x)([])
