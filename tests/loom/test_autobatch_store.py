"""td.loom.autobatch's store under a tape (store.py's StoreColumn): each
round's rows are a chunk of their own, never merged; rows are read (NumPy
and eager) and gathered in any order, with repeats, across chunks, and
gradients flow back to the chunks' tensors through the gathers."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import TreeDecoder, finite_difference_gradient
from treadle.loom.autobatch.store import StoreColumn

RNG = np.random.default_rng(5)


def _column(sizes):
    parts = [RNG.uniform(-1, 1, (n, 3)) for n in sizes]
    column = StoreColumn()
    tensors = [td.constant(p) for p in parts]
    return column, tensors, parts


def test_each_round_is_a_chunk_and_rows_keep_their_numbers():
    column, tensors, parts = _column([4, 4, 1, 6, 4])
    for t in tensors:
        column.append(t)
    assert len(column.chunks) == 5 and all(c is t for c, t in zip(column.chunks, tensors))
    assert column.starts == [0, 4, 8, 9, 15] and column.size == 19
    everything = np.concatenate(parts)
    for row in (0, 3, 4, 7, 8, 9, 14, 15, 18):
        np.testing.assert_array_equal(column.numpy_row(row), everything[row])
        np.testing.assert_array_equal(column.eager_row(row).numpy(), everything[row])


def test_gather_reads_any_rows_in_any_order_across_chunks():
    column, tensors, parts = _column([5, 2, 3, 1])
    for t in tensors:
        column.append(t)
    everything = np.concatenate(parts)
    for rows in ([10, 0, 7, 7, 3], [0, 1, 2, 3, 4], list(range(11)), [6], [9, 8, 5, 10, 10, 0]):
        rows = np.array(rows, np.int64)
        np.testing.assert_array_equal(column.gather(rows).numpy(), everything[rows])
    whole = column.gather(np.arange(column.size, dtype=np.int64))
    np.testing.assert_array_equal(whole.numpy(), everything)


def test_reads_of_a_chunk_stay_right_as_chunks_are_added():
    column, tensors, parts = _column([3, 3])
    column.append(tensors[0])
    np.testing.assert_array_equal(column.numpy_row(2), parts[0][2])  # caches chunk 0's array
    column.append(tensors[1])
    np.testing.assert_array_equal(column.numpy_row(2), parts[0][2])
    np.testing.assert_array_equal(column.numpy_row(4), parts[1][1])


def test_gradients_reach_every_chunk_through_the_gathers():
    sources = [td.Variable(RNG.uniform(-1, 1, (n, 3))) for n in (2, 2, 1)]
    weights = RNG.uniform(-1, 1, (5, 3))
    rows = np.array([4, 0, 2, 2, 1], np.int64)
    with td.GradientTape() as tape:
        column = StoreColumn()
        for v in sources:
            column.append(v.read_value() * 2.0)
        loss = td.reduce_sum(column.gather(rows) * weights)
    grads = tape.gradient(loss, sources)
    expected = np.zeros((5, 3))
    np.add.at(expected, rows, 2.0 * weights)
    for g, (start, stop) in zip(grads, [(0, 2), (2, 4), (4, 5)]):
        g = td.convert_to_tensor(g).numpy()
        np.testing.assert_allclose(g, expected[start:stop], rtol=1e-12)


@pytest.mark.parametrize("schedule", ["depth", "agenda"])
def test_a_decoder_of_many_rounds_reads_stored_rows_in_both_orders(schedule):
    # Deep trees: many rounds, so later rounds read rows of several merged
    # chunks of the store (under the agenda order, through pass-throughs too).
    model = TreeDecoder(max_depth=6)
    zs = list(np.random.default_rng(21).normal(0, 1.5, (8, model.H)))
    batched = td.loom.autobatch(model.per_example, schedule=schedule)
    weights = np.random.default_rng(22).uniform(-1, 1, (len(zs), model.H))
    with td.GradientTape() as tape:
        total, count = batched(zs)
        loss = td.reduce_sum(total * weights)
    expected = [model.numpy(z) for z in zs]
    np.testing.assert_allclose(total.numpy(), np.stack([e[0] for e in expected]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(count.numpy(), [e[1] for e in expected])
    assert len(batched.last_stats) >= 6
    variables = [model.vars[k] for k in ("W_l", "W_r")]

    def numpy_loss():
        return float(np.sum(np.stack([model.numpy(z)[0] for z in zs]) * weights))
    for var, g in zip(variables, tape.gradient(loss, variables)):
        g = td.convert_to_tensor(g).numpy()
        np.testing.assert_allclose(g, finite_difference_gradient(numpy_loss, var), rtol=1e-5, atol=1e-7)
