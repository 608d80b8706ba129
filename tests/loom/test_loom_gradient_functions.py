"""Each loom op's gradient functions: a training function that returns the
intermediates the backward function reads, so the backward pass reuses the
forward run's values instead of recomputing them; and the LoomDef checks of
those functions."""


import numpy as np
import pytest

import treadle as td
from treadle.loom.saving import check_loom_def
from loom_testlib import VEC3, TreeLSTMWeights, tree_lstm_loom, vector_loom


class NoisyScale(td.loom.LoomOp):
    """y = x * r with r uniform random per call: its gradient is r, which only
    the forward run knows (a recomputing backward would draw another r)."""

    def __init__(self):
        super().__init__([VEC3], [VEC3])

    def instantiate_batch(self, inputs):
        x = inputs[0]
        return [x * td.random.uniform(td.shape(x), 1.0, 2.0, dtype=td.float64)]


def noisy_loom():
    x = td.Variable(np.array([1.0, -2.0, 3.0]), name="x")
    loom = td.loom.Loom(named_tensors={"x": x}, named_ops={"scale": NoisyScale()})
    return loom, x


@pytest.mark.parametrize("traced", [False, True])
def test_backward_reads_the_forward_runs_values(traced):
    loom, x = noisy_loom()
    w = loom.make_weaver()
    for _ in range(4):
        w.add_output(w.scale(w.scale(w.x)))   # two layers, four calls each
    msg = w.serialize()

    def step(schedule):
        with td.GradientTape() as tape:
            y = loom.output_tensor(VEC3, schedule)
            loss = td.reduce_sum(y)
        return y, tape.gradient(loss, x)

    if traced:
        step = td.function(step)
    y, g = step(td.constant(msg))
    # d sum(y) / dx = sum over outputs of r1 * r2 = sum(y) / x elementwise.
    np.testing.assert_allclose(g.numpy(), y.numpy().sum(axis=0) / x.numpy(), rtol=1e-12)


def loom_def_of(loom):
    return loom.loom_def


def op_def(d, name):
    return next(op for op in d.metadata.ops if op.name == name)


def check(d):
    return check_loom_def(d)


def test_ops_carry_training_and_backward_functions():
    loom, _, _ = vector_loom()
    d = loom_def_of(loom)
    names = {f.signature.name: f for f in d.library.library.function}
    for op_name in ("add", "mul"):
        op = op_def(d, op_name)
        assert op.training_function_name in names and op.backward_function_name in names
        assert list(op.backward_output_gradients) == [0]
        assert list(op.backward_input_gradients) == [0, 1]
    assert sorted(op_def(d, "mul").backward_saved) == [0, 1]  # x * y: dx needs y, dy needs x


def test_the_tree_lstm_node_reads_intermediates_not_a_recomputation():
    d = loom_def_of(tree_lstm_loom(TreeLSTMWeights()))
    node = op_def(d, "node")
    n_forward = len(node.input_type_shapes) + node.num_captures
    train = next(f for f in d.library.library.function if f.signature.name == node.training_function_name)
    forward = next(f for f in d.library.library.function if f.signature.name == node.function_name)
    # The training function returns the two outputs and then intermediates
    # (the gates' sigmoids and tanhs, the concatenated input), which the
    # backward function reads.
    assert len(train.signature.output_arg) > len(forward.signature.output_arg) == 2
    assert any(v >= n_forward + 2 for v in node.backward_saved)


@pytest.mark.parametrize("corrupt, message", [
    (lambda op: op.ClearField("training_function_name"), "come together"),
    (lambda op: setattr(op, "training_function_name", "nowhere"), "the library lacks the first"),
    (lambda op: setattr(op, "backward_function_name", "nowhere"), "the library lacks the second"),
    (lambda op: op.backward_saved.append(-1), "negative value index"),
    (lambda op: op.backward_saved.__setitem__(0, 99), "backward_saved"),
    (lambda op: op.backward_saved.append(0), "backward_saved"),
    (lambda op: setattr(op, "backward_function_name", op.training_function_name), "backward function"),
    (lambda op: setattr(op, "training_function_name", op.backward_function_name), "training function"),
])
def test_malformed_gradient_functions_are_rejected(corrupt, message):
    loom, _, _ = vector_loom()
    d = loom_def_of(loom)
    check(d)  # the original is fine
    corrupt(op_def(d, "mul"))
    with pytest.raises(td.errors.InvalidArgumentError, match=message):
        check(d)


class _Lookup(td.loom.LoomOp):
    """x * table[index of x's first element]: the captured table is read through a gather."""

    def __init__(self, table):
        self.table = table
        super().__init__([VEC3], [VEC3])

    def instantiate_batch(self, inputs):
        x = inputs[0]
        return [x * td.gather(self.table, td.cast(x[:, 0], td.int32))]


def test_a_capture_read_through_a_gather_gets_its_dense_gradient():
    # The op's own gradient for the table is an IndexedSlices; the loom adds
    # up captures' gradients densely, and gives the variable the sum.
    table = td.Variable(np.arange(15.0).reshape(5, 3) / 10)
    rows = np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 1.0], [1.0, 0.5, 0.5]])
    loom = td.loom.Loom(named_ops={"pick": _Lookup(table)}, batch_inputs={VEC3: td.Variable(rows)})
    w = loom.make_weaver()
    for i in range(3):
        w.add_output(w.pick(w.batch_input(VEC3, i)))
    with td.GradientTape() as tape:
        loss = td.reduce_sum(loom.output_tensor(VEC3, w))
    g = tape.gradient(loss, table)
    want = np.zeros((5, 3))
    for r in rows:
        want[int(r[0])] += r
    np.testing.assert_allclose(td.convert_to_tensor(g).numpy(), want, rtol=1e-12)
