"""td.loom.autobatch's recording fast path: a cell called positionally with
per-example values whose signatures were seen is recorded from a cache of
(function, argument signature numbers). It must give the values and
gradients of the general path (keyword calls, eager-tensor arguments), and
fall back to it whenever the signature or the kind of argument changes."""

import gc
import weakref

import numpy as np
import pytest

import treadle as td
from autobatch_models import finite_difference_gradient
from treadle.loom.autobatch import CrossExampleError

pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")

RNG = np.random.default_rng(11)
EMBEDDING = RNG.uniform(-1, 1, (7, 3))
W = RNG.uniform(-1, 1, (3, 3))
TREES = [(1, (2, 3)), ((4, 5), 6), 0, ((1, 2), (3, (4, 5)))]


def _model():
    """A recursion calling `combine` positionally (the fast path) and the
    same recursion calling it by keywords (the general path)."""
    emb, w = td.Variable(EMBEDDING), td.Variable(W)

    @td.function
    def combine(a, b):
        return td.tanh(td.linalg.matvec(w, a + b, transpose_a=True)), a * b

    def positional(tree):
        if isinstance(tree, int):
            return td.gather(emb, tree)
        return combine(positional(tree[0]), positional(tree[1]))[0]

    def keywords(tree):
        if isinstance(tree, int):
            return td.gather(emb, tree)
        return combine(a=keywords(tree[0]), b=keywords(tree[1]))[0]
    return emb, w, positional, keywords


def _numpy(tree, emb=EMBEDDING, w=W):
    if isinstance(tree, int):
        return emb[tree]
    a, b = _numpy(tree[0], emb, w), _numpy(tree[1], emb, w)
    return np.tanh((a + b) @ w)


def _dense(g):
    return np.asarray(td.convert_to_tensor(g)) if isinstance(g, td.IndexedSlices) else np.asarray(g)


def test_fast_and_general_paths_give_the_same_values_and_gradients():
    emb, w, positional, keywords = _model()
    weights = RNG.uniform(-1, 1, (len(TREES), 3))
    grads = []
    for fn in (positional, keywords):
        with td.GradientTape() as tape:
            out = td.loom.autobatch(fn)(TREES)
            loss = td.reduce_sum(out * weights)
        np.testing.assert_allclose(out.numpy(), np.stack([_numpy(t) for t in TREES]), rtol=1e-12, atol=1e-12)
        grads.append([_dense(g) for g in tape.gradient(loss, [emb, w])])
    for fast, general in zip(*grads):
        np.testing.assert_allclose(fast, general, rtol=1e-12, atol=1e-12)

    def numpy_loss():
        e, m = np.asarray(emb.read_value()), np.asarray(w.read_value())
        return float(np.sum(np.stack([_numpy(t, e, m) for t in TREES]) * weights))
    np.testing.assert_allclose(grads[0][1], finite_difference_gradient(numpy_loss, w), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grads[0][0], finite_difference_gradient(numpy_loss, emb), rtol=1e-5, atol=1e-7)


def test_fast_path_is_cached_per_function_and_signature():
    emb, _, positional, _ = _model()
    batched = td.loom.autobatch(positional)
    batched(TREES)
    cached = dict(batched._registry.fast_calls)
    assert len(cached) == 1  # one cell, one signature (two float64 [3] values)
    batched(TREES[:2])
    assert batched._registry.fast_calls == cached  # the next call reuses it: no new op
    assert len(batched._registry.ops) == 1


def test_a_new_signature_falls_back_and_gets_its_own_op():
    @td.function
    def double(x):
        return x * 2.0

    emb3, emb4 = td.Variable(EMBEDDING), td.Variable(RNG.uniform(-1, 1, (5, 4)))

    def fn(example):
        table, row = example
        return td.reduce_sum(double(td.gather(emb3 if table == 3 else emb4, row)))
    examples = [(3, 1), (4, 2), (3, 5), (4, 0)]
    batched = td.loom.autobatch(fn)
    out = batched(examples).numpy()
    tables = {3: EMBEDDING, 4: np.asarray(emb4.read_value())}
    np.testing.assert_allclose(out, [2 * tables[t][r].sum() for t, r in examples], rtol=1e-12)
    assert len(batched._registry.fast_calls) == 2  # [3] and [4] rows: two signatures, two cell ops


def test_more_cells_and_signatures_in_turn_than_the_recent_calls_kept_each_record_their_own_op():
    # The hook compares a call with the last few distinct calls' keys
    # before the cache's; six (cell, signature) pairs in turn, more than it
    # keeps, must each still be recorded as their own op.
    cells = []
    for k in range(3):
        @td.function
        def cell(x, k=float(k + 1)):
            return x * k + 1.0
        cells.append(cell)
    emb3, emb4 = td.Variable(EMBEDDING), td.Variable(RNG.uniform(-1, 1, (5, 4)))

    def fn(rows):
        total = 0.0
        for step, row in enumerate(rows):
            cell, table = cells[step % 3], (emb3, emb4)[step // 3 % 2]
            total = total + td.reduce_sum(cell(td.gather(table, row)))
        return total
    tables = (EMBEDDING, np.asarray(emb4.read_value()))
    examples = [[1, 0, 2, 3, 4, 0, 2, 1, 0, 4, 1, 3], [0, 1, 2, 0, 1, 2, 3, 4, 0, 1, 2, 3]]
    batched = td.loom.autobatch(fn)
    out = batched(examples).numpy()
    expected = [sum((tables[step // 3 % 2][row] * (step % 3 + 1) + 1.0).sum() for step, row in enumerate(rows))
                for rows in examples]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert len(batched._registry.fast_calls) == 6


def test_eager_tensor_and_python_arguments_take_the_general_path():
    @td.function
    def scale(x, factor):
        return x * factor

    emb = td.Variable(EMBEDDING)

    def fn(row):
        v = td.gather(emb, row)
        a = scale(v, 3.0)                             # a Python number: part of the signature
        b = scale(v, td.constant([1.0, 2.0, 3.0], td.float64))  # an eager tensor: a constant row
        return a + scale(a, b)                        # values again: the fast path
    out = td.loom.autobatch(fn)([0, 4, 6]).numpy()
    expected = [3 * EMBEDDING[r] + 3 * EMBEDDING[r] * EMBEDDING[r] * [1.0, 2.0, 3.0] for r in (0, 4, 6)]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_a_variable_passed_to_a_cell_is_read_not_batched():
    @td.function
    def project(m, x):
        return td.linalg.matvec(m, x, transpose_a=True)

    emb, w = td.Variable(EMBEDDING), td.Variable(W)

    def fn(row):
        return project(w.read_value(), td.gather(emb, row))
    out = td.loom.autobatch(fn)([1, 2, 1]).numpy()
    np.testing.assert_allclose(out, EMBEDDING[[1, 2, 1]] @ W, rtol=1e-12)


def test_a_row_gathered_twice_is_one_value_and_out_of_range_rows_are_refused():
    emb = td.Variable(EMBEDDING)
    seen = []

    def fn(row):
        a, b = td.gather(emb, row), td.gather(emb, row)
        seen.append(a is b)
        return a + b
    out = td.loom.autobatch(fn)([2, 3]).numpy()
    np.testing.assert_allclose(out, 2 * EMBEDDING[[2, 3]], rtol=1e-12)
    assert seen == [True, True]

    def bad(row):
        return td.gather(emb, row) * 1.0
    with pytest.raises(IndexError, match="index 7 is out of range for a variable of 7 rows"):
        td.loom.autobatch(bad)([1, 7])
    with pytest.raises(IndexError, match="index -1 is out of range"):
        td.loom.autobatch(bad)([-1])


def test_gather_along_another_axis_is_a_plain_op():
    emb = td.Variable(EMBEDDING)

    def fn(col):
        return td.gather(emb, col, axis=1) * 2.0
    out = td.loom.autobatch(fn)([0, 2]).numpy()
    np.testing.assert_allclose(out, 2 * EMBEDDING[:, [0, 2]].T, rtol=1e-12)


def test_fast_path_still_refuses_another_examples_value():
    emb, _, _, _ = _model()

    @td.function
    def add(a, b):
        return a + b
    kept = []

    def fn(row):
        v = td.gather(emb, row) * 1.0
        if kept:
            return add(v, kept[0])  # a value of example 0 in example 1's call
        kept.append(v)
        return add(v, v)
    with pytest.raises(CrossExampleError, match="example 0 is used by example 1"):
        td.loom.autobatch(fn)([0, 1])


def test_the_call_leaves_no_reference_cycle_behind():
    """Reference counting frees a call's recorder (and its store of computed
    rows) when it returns; no cyclic garbage waits for the collector."""
    emb, _, positional, _ = _model()
    recorders = []

    def fn(tree):
        recorders.append(weakref.ref(td.gather(emb, 0).graph))
        return positional(tree)
    batched = td.loom.autobatch(fn)
    batched(TREES)  # the first call traces the cells (tracing may leave cycles of its own)
    recorders.clear()
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        out = batched(TREES)
        assert recorders and all(r() is None for r in recorders)
    finally:
        if collecting:
            gc.enable()
    np.testing.assert_allclose(out.numpy(), np.stack([_numpy(t) for t in TREES]), rtol=1e-12, atol=1e-12)


def test_the_collector_does_not_run_for_the_values_a_call_made_and_freed():
    """The collector stays off until the call's values are freed, so that
    the thousands it made (and freed) start no collection after it."""
    emb, _, positional, _ = _model()
    batched = td.loom.autobatch(positional)
    trees = TREES * 100  # about 4,000 values recorded (and freed) by the call
    batched(trees)  # tracing, the loom
    started = []

    def note(phase, info):
        if phase == "start":
            started.append(info["generation"])
    gc.collect()
    gc.callbacks.append(note)
    try:
        out = batched(trees)
        np.asarray(out)  # the caller's next allocations
    finally:
        gc.callbacks.remove(note)
    assert gc.isenabled() and started == []
    np.testing.assert_allclose(out.numpy()[:len(TREES)], np.stack([_numpy(t) for t in TREES]), rtol=1e-12,
                               atol=1e-12)
