"""td.loom.autobatch: shared sub-results computed once, batched launches
against their lower bound, and the errors of mismatched outputs, of
exceptions in the function and of values used across examples."""

import threading
import traceback

import numpy as np
import pytest

import treadle as td
from treadle.loom.autobatch import CrossExampleError, launch_counts
from treadle.loom.autobatch.agenda import agenda_arrays

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


def test_calls_of_other_threads_run_as_usual_while_a_batch_records():
    seen = []

    def other_thread():
        seen.append(np.asarray(cell_b(td.constant(np.zeros(2)))))  # an eager call, not recorded

    def fn(x):
        y = cell_b(td.constant(np.asarray(x)))
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        return y

    batched = td.loom.autobatch(fn)
    out = batched([[0.0, 1.0]])
    np.testing.assert_allclose(seen[0], [1.0, 1.0])
    np.testing.assert_allclose(out.numpy(), 2 / (1 + np.exp(-np.array([[0.0, 1.0]]))))
    assert batched.last_stats[0]["nodes"] == 1


def test_agenda_order_computes_the_same_values():
    # mixed cells whose calls interleave at different depths, and a DAG
    def fn(n):
        x = td.constant(np.full(2, 0.1 * n))
        for k in range(n):
            x = cell_a(x) if k % 2 == 0 else cell_b(x)
        y = cell_b(td.constant(np.ones(2)))
        return cell_a(x + y) * x

    examples = [1, 4, 2, 3, 5]
    depth, agenda = td.loom.autobatch(fn), td.loom.autobatch(fn, schedule="agenda")
    agenda.count_launches = True
    np.testing.assert_allclose(agenda(examples).numpy(), depth(examples).numpy(), rtol=1e-12)
    stats = agenda.last_stats[0]
    assert stats["agenda"] < stats["depth"]  # the agenda batches what depth order launches apart
    with pytest.raises(ValueError, match="schedule must be"):
        td.loom.autobatch(fn, schedule="random")


def test_agenda_order_gradients_match_depth_order():
    def fn(n):
        x = td.constant(np.full(2, 0.3 * n))
        for k in range(n):
            x = cell_b(x) if k % 3 == 1 else cell_a(x)
        return x

    grads = []
    for schedule in ("depth", "agenda"):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.loom.autobatch(fn, schedule=schedule)([3, 1, 4, 2]))
        grads.append(np.asarray(tape.gradient(loss, W)))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_agenda_arrays_realize_the_agenda_launches():
    # chain A-B-A-B of one example beside a chain B-A of another, and a lone A reading batch input rows
    node_op = [0, 1, 0, 1, 1, 0, 0]
    parents = [[], [0], [1], [2], [], [4], []]
    splits, args = [0], []
    for ps in parents:
        if ps:
            args += [(0, 0, p, 0, -1) for p in ps]
        else:
            args.append((0, 1, 0, 0, -1))
        splits.append(len(args))
    DELAY = 9
    new_op, new_splits, new_args, new_index = agenda_arrays(node_op, splits, args, lambda i, j: DELAY)
    depth = []
    for i in range(len(new_op)):
        ds = [depth[a[2]] for a in new_args[new_splits[i]:new_splits[i + 1]] if a[1] == 0]
        depth.append(1 + max(ds, default=0))
    launches = {(d, o) for d, o in zip(depth, new_op) if o != DELAY}
    counts = launch_counts(node_op, splits, [a[1] for a in args], [a[2] for a in args])
    assert len(launches) == counts["agenda"] < counts["depth"]
    assert [new_op[k] for k in new_index] == node_op


def test_called_inside_a_td_function():
    batched = td.loom.autobatch(lambda x: cell_b(td.constant(np.asarray(x))))

    @td.function
    def f():
        return batched([[0.0, 1.0]])

    with pytest.raises(RuntimeError, match="record"):
        f()


def test_calls_from_two_threads_take_turns():
    def fn(x):
        return cell_a(cell_b(td.constant(np.asarray(x))))

    batched = td.loom.autobatch(fn)
    examples = [[0.1 * k, -0.2 * k] for k in range(6)]
    expected = batched(examples).numpy()
    results = [None, None]

    def worker(k):
        results[k] = batched(examples).numpy()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-12)
