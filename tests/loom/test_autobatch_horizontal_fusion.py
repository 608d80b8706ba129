"""Horizontal fusion of a cell's per-example trace (horizontal_fusion.py):
matrix products by one shared matrix (a loop over a list argument,
unrolled) become one product of the stacked left operands, split back. The
results must be those of the separate products (the NumPy recursion, the
unfused path, finite-difference gradients), and products that cannot be
stacked soundly (one computed from another, other operands or attributes)
must stay apart."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import ChildSumTreeLSTM, finite_difference_gradient
from treadle.loom.autobatch import batched_ops
from treadle.loom.autobatch.horizontal_fusion import FusedPerExample

pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")

RNG = np.random.default_rng(5)
W = RNG.uniform(-1, 1, (3, 3))
V = RNG.uniform(-1, 1, (3, 3))
TREES = [(1, [(2, []), (3, []), (4, [(5, [])])]), (0, []), (2, [(1, [(0, []), (3, [])])]),
         (5, [(4, [(3, []), (2, []), (1, [])]), (0, [(1, [])])]), (3, [(2, []), (2, []), (0, []), (1, [])])]


def _dense(g):
    return td.convert_to_tensor(g).numpy() if isinstance(g, td.IndexedSlices) else g.numpy()


def _run(model, unfused, monkeypatch, weights):
    """The autobatched root states of TREES and the gradients of a weighted sum."""
    if unfused:
        monkeypatch.setattr(batched_ops, "FusedPerExample", lambda per_example: per_example)
    batched = td.loom.autobatch(model.root_h)
    variables = list(model.vars.values())
    with td.GradientTape() as tape:
        out = batched(TREES)
        loss = td.reduce_sum(out * weights)
    grads = [_dense(g) for g in tape.gradient(loss, variables)]
    monkeypatch.undo()
    return batched, out.numpy(), grads


def _matmuls(batched, arity):
    """The MatMul ops of the batched op of the cell with `arity` children."""
    for info in batched._registry.ops:
        if len(info.in_type_shapes) == 1 + 2 * arity and "cell" in info.op.what:
            name = f"op{info.index:05d}"
            return sum(op.type == "MatMul" for op in batched.loom._traced_ops[name].function.graph.operations)
    raise AssertionError(f"no cell of {arity} children")


def test_child_sum_cells_stack_their_children_products_with_the_recursions_values_and_gradients(monkeypatch):
    model = ChildSumTreeLSTM()
    weights = RNG.uniform(-1, 1, (len(TREES), model.H))
    batched, out, grads = _run(model, False, monkeypatch, weights)
    plain, out_plain, grads_plain = _run(model, True, monkeypatch, weights)
    # W, U_iou and one stacked U_f product, whatever the number of children (unfused: one U_f product per child)
    assert [_matmuls(batched, k) for k in (1, 2, 3, 4)] == [3, 3, 3, 3]
    assert [_matmuls(plain, k) for k in (1, 2, 3, 4)] == [3, 4, 5, 6]
    np.testing.assert_allclose(out, np.stack([model.numpy_root_h(t) for t in TREES]), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out, out_plain, rtol=1e-12, atol=1e-14)

    def numpy_loss():
        return float(np.sum(np.stack([model.numpy_root_h(t) for t in TREES]) * weights))
    for var, g, g_plain in zip(model.vars.values(), grads, grads_plain):
        np.testing.assert_allclose(g, g_plain, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(g, finite_difference_gradient(numpy_loss, var), rtol=1e-5, atol=1e-7)


def _vectorized(fn, *elems):
    """td.vectorized_map of FusedPerExample(fn) over elems, and how many groups it fused."""
    fused = FusedPerExample(lambda slices: fn(*slices))
    out = td.vectorized_map(fused, tuple(td.constant(e) for e in elems))
    return [np.asarray(o) for o in out], fused.fused_groups


def test_products_by_one_matrix_of_different_row_counts_are_stacked():
    w = td.constant(W)
    xs = RNG.uniform(-1, 1, (4, 2, 3))

    def fn(x):
        return td.matmul(x[:1], w), td.matmul(x, w) * 2.0, td.matmul(x[1:], w) + 1.0
    out, groups = _vectorized(fn, xs)
    assert groups == 1
    np.testing.assert_allclose(out[0], xs[:, :1] @ W, rtol=1e-13)
    np.testing.assert_allclose(out[1], 2.0 * (xs @ W), rtol=1e-13)
    np.testing.assert_allclose(out[2], xs[:, 1:] @ W + 1.0, rtol=1e-13)


def test_a_chain_of_products_by_one_matrix_stays_apart():
    w = td.constant(W)
    xs = RNG.uniform(-1, 1, (3, 1, 3))

    def fn(x):
        h = x
        for _ in range(3):
            h = td.tanh(td.matmul(h, w))
        return (h,)
    out, groups = _vectorized(fn, xs)
    assert groups == 0
    expected = xs
    for _ in range(3):
        expected = np.tanh(expected @ W)
    np.testing.assert_allclose(out[0], expected, rtol=1e-13)


def test_other_matrices_and_attributes_are_other_groups():
    w, v = td.constant(W), td.constant(V)
    xs, ys = RNG.uniform(-1, 1, (3, 1, 3)), RNG.uniform(-1, 1, (3, 1, 3))

    def fn(x, y):
        return (td.matmul(x, w), td.matmul(y, w), td.matmul(x, v), td.matmul(y, v, transpose_b=True),
                td.matmul(td.transpose(x), w, transpose_a=True), td.matmul(td.transpose(y), w, transpose_a=True))
    out, groups = _vectorized(fn, xs, ys)
    assert groups == 1  # x @ w and y @ w; one product by v each way; transpose_a is never stacked
    expected = [xs @ W, ys @ W, xs @ V, ys @ V.T, xs @ W, ys @ W]
    for o, e in zip(out, expected):
        np.testing.assert_allclose(o, e, rtol=1e-13)


def test_groups_reading_each_other_both_ways_are_left_as_traced():
    w, v = td.constant(W), td.constant(V)
    xs, ys = RNG.uniform(-1, 1, (3, 1, 3)), RNG.uniform(-1, 1, (3, 1, 3))

    def fn(x, y):
        a1, b1 = td.matmul(x, w), td.matmul(y, v)
        return td.matmul(b1, w), td.matmul(a1, v)  # {a1, a2} reads {b1, b2} and the other way round
    out, groups = _vectorized(fn, xs, ys)
    assert groups == 0
    np.testing.assert_allclose(out[0], ys @ V @ W, rtol=1e-13)
    np.testing.assert_allclose(out[1], xs @ W @ V, rtol=1e-13)


def test_a_recording_run_in_a_td_function_gives_the_same_gradients(monkeypatch):
    model = ChildSumTreeLSTM()
    weights = RNG.uniform(-1, 1, (len(TREES), model.H))
    _, out, grads = _run(model, False, monkeypatch, weights)
    batched = td.loom.autobatch(model.root_h)
    variables = list(model.vars.values())

    @td.function
    def step(recording):
        with td.GradientTape() as tape:
            outputs = recording.outputs()
            loss = td.reduce_sum(outputs * weights)
        return outputs, tape.gradient(loss, variables)
    traced_out, traced_grads = step(batched.record(TREES))
    np.testing.assert_allclose(traced_out.numpy(), out, rtol=1e-12, atol=1e-14)
    for g, g_eager in zip(traced_grads, grads):
        np.testing.assert_allclose(_dense(g), g_eager, rtol=1e-10, atol=1e-13)
