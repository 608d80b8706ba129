"""td.loom.autobatch's store as NumPy arrays (store.ArrayColumn), used
outside a gradient tape and a graph: rows keep their numbers as the array
grows, examples read them unchanged and cannot write them, a round's batch
input shares the array's memory, and a round that reads stored rows,
constants and rows of a variable of one type shape computes what NumPy
does, with and without a tape (whose rounds keep StoreColumns). A tape
opened while the store is arrays turns it into StoreColumns."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import finite_difference_gradient
from treadle.loom.autobatch.recording import Recorder
from treadle.loom.autobatch.registry import Registry
from treadle.loom.autobatch.rounds import _store_as_arrays
from treadle.loom.autobatch.store import ArrayColumn, StoreColumn
from treadle.loom.type_shape import TypeShape

RNG = np.random.default_rng(31)
TS = TypeShape(td.float64, (2,))


def _filled(sizes, capacities=None):
    column = ArrayColumn(TS, capacities)
    parts = [RNG.uniform(-1, 1, (n, 2)) for n in sizes]
    for p in parts:
        column.append(td.constant(p))
    return column, np.concatenate(parts)


def test_rows_keep_their_numbers_as_the_array_grows():
    capacities = {}
    column, everything = _filled([50, 30, 100, 1], capacities)
    assert column.size == 181 and len(column.array) >= 181
    assert capacities[TS] == len(column.array)  # the next column of TS starts this large
    assert len(ArrayColumn(TS, capacities).array) == capacities[TS]
    for row in (0, 49, 50, 79, 80, 180):
        np.testing.assert_array_equal(column.numpy_row(row), everything[row])
        np.testing.assert_array_equal(column.eager_row(row).numpy(), everything[row])
    np.testing.assert_array_equal(column.batch().numpy(), everything)


def test_rows_of_scalars_read_as_numpy_scalars_and_0d_tensors():
    column = ArrayColumn(TypeShape(td.float32, ()))
    column.append(td.constant(np.arange(5, dtype=np.float32)))
    assert column.numpy_row(2) == 2.0
    row = column.eager_row(3)
    assert row.shape.as_list() == [] and float(row.numpy()) == 3.0
    np.testing.assert_array_equal(column.gather(np.array([4, 1], np.int64)).numpy(), [4.0, 1.0])


def test_a_row_read_before_the_array_grows_keeps_its_value():
    column, everything = _filled([64])
    read = column.numpy_row(3)
    column.append_array(RNG.uniform(-1, 1, (500, 2)))  # grows: a new array
    np.testing.assert_array_equal(read, everything[3])
    np.testing.assert_array_equal(column.numpy_row(3), everything[3])


def test_examples_cannot_write_stored_rows():
    column, _ = _filled([4])
    with pytest.raises(ValueError, match="read-only"):
        column.numpy_row(1)[0] = 5.0


def test_the_batch_input_shares_the_array_and_appended_rows_follow():
    column, everything = _filled([3, 2])
    first = column.append_array([np.array([7.0, 8.0]), np.array([9.0, 10.0])])  # constants' rows
    assert first == 5 and column.size == 7
    batch = column.batch()
    assert np.shares_memory(np.asarray(batch), column.array)
    np.testing.assert_array_equal(batch.numpy(), np.concatenate([everything, [[7, 8], [9, 10]]]))


def test_gather_reads_any_rows_in_any_order_and_as_a_store_column():
    column, everything = _filled([5, 2, 3])
    for rows in ([9, 0, 7, 7, 3], [6], list(range(10))):
        rows = np.array(rows, np.int64)
        np.testing.assert_array_equal(column.gather(rows).numpy(), everything[rows])
    as_chunks = column.as_store_column()
    assert isinstance(as_chunks, StoreColumn) and as_chunks.size == 10
    np.testing.assert_array_equal(as_chunks.gather(np.arange(10)).numpy(), everything)


def test_a_tape_turns_the_store_into_store_columns():
    recorder = Recorder(Registry())
    column, everything = _filled([4, 2])
    recorder.store[TS] = column
    assert _store_as_arrays(recorder)
    with td.GradientTape():
        assert not _store_as_arrays(recorder)
    converted = recorder.store[TS]
    assert isinstance(converted, StoreColumn)
    np.testing.assert_array_equal(converted.gather(np.arange(6)).numpy(), everything)
    assert not _store_as_arrays(recorder)  # for good: its rows are tensors now


def _mixed_reads_model():
    w = td.Variable(RNG.uniform(-1, 1, (3, 3)))
    emb = td.Variable(RNG.uniform(-1, 1, (5, 1, 3)))

    @td.function
    def cell(s):
        return td.tanh(td.matmul(s, w))

    def fn(example):
        x, word, again = example
        h = cell(td.constant(x[None]))
        if float(td.reduce_sum(h)) > -10:
            # A second round reads a stored row, a constant and a row of emb, all [1, 3] (one batch
            # input), and a row of emb reshaped (emb's rows alone: the variable, read whole).
            h = cell(h + td.constant(x[None] * 0.5) + td.gather(emb, word)) + cell(td.reshape(emb[word], [1, 3]))
        if again and float(td.reduce_sum(h)) > -10:  # a third round reads rows of two earlier ones
            h = cell(h) * 2.0
        return h

    def numpy(example, W, E):
        x, word, again = example
        h = np.tanh(x[None] @ W)
        h = np.tanh((h + x[None] * 0.5 + E[word]) @ W) + np.tanh(E[word] @ W)
        return np.tanh(h @ W) * 2.0 if again else h
    return w, emb, fn, numpy


def test_a_round_reading_stored_rows_constants_and_variable_rows_agrees_with_numpy():
    w, emb, fn, numpy = _mixed_reads_model()
    examples = [(RNG.uniform(-1, 1, 3), int(RNG.integers(0, 5)), i % 3 == 0) for i in range(10)]
    batched = td.loom.autobatch(fn)
    out = batched(examples)
    assert batched._registry.store_capacities  # the store was arrays
    assert len(batched.last_stats) == 3
    expected = np.stack([numpy(e, w.numpy(), emb.numpy()) for e in examples])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(batched(examples).numpy(), expected, rtol=1e-12)  # columns reused, as large


def test_the_same_rounds_under_a_tape_give_gradients_by_finite_differences():
    w, emb, fn, numpy = _mixed_reads_model()
    examples = [(RNG.uniform(-1, 1, 3), int(RNG.integers(0, 5)), i % 2 == 0) for i in range(6)]
    batched = td.loom.autobatch(fn)
    weights = RNG.uniform(-1, 1, (len(examples), 1, 3))
    inference = batched(examples).numpy()
    with td.GradientTape() as tape:
        out = batched(examples)
        loss = td.reduce_sum(out * weights)
    np.testing.assert_allclose(out.numpy(), inference, rtol=1e-12)
    g_w, g_emb = tape.gradient(loss, [w, emb])

    def numpy_loss():
        return float(np.sum(np.stack([numpy(e, w.numpy(), emb.numpy()) for e in examples]) * weights))
    np.testing.assert_allclose(np.asarray(g_w), finite_difference_gradient(numpy_loss, w), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(td.convert_to_tensor(g_emb)), finite_difference_gradient(numpy_loss, emb),
                               rtol=1e-6, atol=1e-8)
