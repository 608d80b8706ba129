"""The loop mode's layout: pass-through calls are skipped, so a call many
depths up reads a batch-input row, a named tensor or a constant where it
lies, and a result of a shallow depth where it was computed (its depth is
held until the last call that reads it has run). Values and gradients are
checked against NumPy and against the unrolled mode, which keeps the
pass-throughs."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import VEC3, BinaryLoomOp, dense

TABLE = np.random.default_rng(5).normal(size=(6, 3))
X0 = np.array([1.5, -0.5, 0.25])
Y0 = np.array([0.5, 2.0, -1.0])
K = np.array([0.75, -1.25, 2.0])
CHAIN = 6


def make_loom(max_depth=None):
    x = td.Variable(X0.copy(), name="x")
    table = td.Variable(TABLE.copy(), name="table")
    loom = td.loom.Loom(max_depth=max_depth, named_tensors={"x": x},
                        named_ops={"add": BinaryLoomOp(VEC3, td.add), "mul": BinaryLoomOp(VEC3, td.multiply)},
                        batch_inputs={VEC3: table})
    return loom, x, table


def weave(loom):
    """Per chain k: a = row k + x (depth 1); b = a * row k+1, then CHAIN - 1 more
    multiplications by x (depths 2..CHAIN+1); out = (b + a) * const + row 0,
    where a, the constant and the batch rows are read many depths up."""
    w = loom.make_weaver()
    for k in range(3):
        row = w.batch_input(VEC3, k)
        a = w.add(row, w.x)
        b = w.mul(a, w.batch_input(VEC3, k + 1))
        for _ in range(CHAIN - 1):
            b = w.mul(b, w.x)
        out = w.add(w.mul(w.add(b, a), w(K)), w.batch_input(VEC3, 0))
        w.add_output(out)
        w.add_output(a)               # an output of depth 1, read again at depth CHAIN + 2
    w.add_output(w.batch_input(VEC3, 5))  # a depth-0 output
    return w


def reference(x, table):
    outs = []
    for k in range(3):
        a = table[k] + x
        b = a * table[k + 1] * x ** (CHAIN - 1)
        outs += [(b + a) * K + table[0], a]
    return np.array(outs + [table[5]])


def reference_grads(x, table, seed):
    """Gradients of sum(outputs * seed) with respect to x and the table."""
    gx, gt = np.zeros(3), np.zeros_like(table)
    for k in range(3):
        s_out, s_a = seed[2 * k], seed[2 * k + 1]
        a = table[k] + x
        p = x ** (CHAIN - 1)
        g_b = s_out * K
        g_a = s_out * K + g_b * table[k + 1] * p + s_a
        gt[k + 1] += g_b * a * p
        gx += g_b * a * table[k + 1] * (CHAIN - 1) * x ** (CHAIN - 2) + g_a
        gt[k] += g_a
        gt[0] += s_out
    gt[5] += seed[6]
    return gx, gt


@pytest.mark.parametrize("unrolled", [False, True])
def test_values_and_gradients_read_rows_many_depths_down(unrolled):
    loom, x, table = make_loom(max_depth=CHAIN + 6 if unrolled else None)  # two empty layers
    w = weave(loom)
    seed = np.random.default_rng(2).normal(size=(7, 3))
    with td.GradientTape() as tape:
        out = loom.output_tensor(VEC3, w)
        loss = td.reduce_sum(out * seed)
    gx, gt = tape.gradient(loss, [x, table])
    np.testing.assert_allclose(out.numpy(), reference(X0, TABLE), rtol=1e-12)
    want_x, want_t = reference_grads(X0, TABLE, seed)
    np.testing.assert_allclose(dense(gx), want_x, rtol=1e-11)
    np.testing.assert_allclose(dense(gt), want_t, rtol=1e-11, atol=1e-13)


def _layout_step(loom, x, table, seed):
    # The variables are captured (not default arguments: a td.function traces a
    # variable argument as a variable of its own, as TensorFlow does, which the
    # loom, built on the captured ones, does not read).
    @td.function
    def step(schedule):
        with td.GradientTape() as tape:
            out = loom.output_tensor(VEC3, schedule)
            loss = td.reduce_sum(out * seed)
        return [out] + tape.gradient(loss, [x, table])
    return step


def test_loop_and_unrolled_modes_agree_inside_a_function():
    results = []
    seed = np.random.default_rng(3).normal(size=(7, 3))
    for max_depth in (None, CHAIN + 4):  # exactly as deep as the schedule
        loom, x, table = make_loom(max_depth)
        msg = weave(loom).serialize()

        results.append(_layout_step(loom, x, table, seed)(td.constant(msg)))
    for a, b in zip(*results):
        np.testing.assert_allclose(dense(a), dense(b), rtol=1e-13, atol=1e-15)


def test_a_shallow_result_read_by_many_depths_survives_the_run():
    # `a` (depth 1) is read at every depth up to 12: the runtime must hold
    # depth 1's rows until the last of them, while releasing the chain's.
    loom, x, _ = make_loom()
    w = loom.make_weaver()
    a = w.add(w.x, w.x)
    b = a
    for _ in range(11):
        b = w.add(b, a)
    w.add_output(b)
    np.testing.assert_allclose(loom.output_tensor(VEC3, w).numpy(), [24 * X0])


class UnaryLoomOp(td.loom.LoomOp):
    def __init__(self, in_ts, out_ts, fn):
        self._fn = fn
        super().__init__([in_ts], [out_ts])

    def instantiate_batch(self, inputs):
        return [self._fn(inputs[0])]


def test_ops_no_gradient_reaches_are_skipped_not_run_on_zeros():
    # log(0) = -inf at depth 2 is computed but neither output nor read: no
    # gradient reaches depth 2, so log's backward must not run (on zeros it
    # would give 0 * inf = NaN, and the NaN would reach row 0's gradient).
    table = td.Variable(np.vstack([np.zeros(3), TABLE[1:3]]), name="table")
    loom = td.loom.Loom(named_ops={"add": BinaryLoomOp(VEC3, td.add),
                                   "log": UnaryLoomOp(VEC3, VEC3, td.math.log)},
                        batch_inputs={VEC3: table})
    w = loom.make_weaver()
    w.add_output(w.add(w.batch_input(VEC3, 1), w.batch_input(VEC3, 2)))  # depth 1
    w.log(w.add(w.batch_input(VEC3, 0), w.batch_input(VEC3, 0)))          # depths 1 and 2, never read
    with td.GradientTape() as tape:
        loss = td.reduce_sum(loom.output_tensor(VEC3, w))
    np.testing.assert_array_equal(dense(tape.gradient(loss, table)), [[0.0] * 3, [1.0] * 3, [1.0] * 3])
