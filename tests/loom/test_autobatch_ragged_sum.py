"""td.add_n inside td.loom.autobatch: the sums of lists of per-example
values of one signature are one op for every list length (a ragged input),
so that sums of different lengths run in one launch. Values and gradients
must be those of NumPy and of finite differences; an add_n that reads a
shared value (a variable, an eager tensor) keeps its op per count."""

import numpy as np

import treadle as td
from autobatch_models import finite_difference_gradient

RNG = np.random.default_rng(31)
W = RNG.uniform(-0.8, 0.8, (4, 4))
ROOTS = RNG.uniform(-1, 1, (9, 4))
STEPS = [0, 1, 2, 3, 4, 1, 5, 2, 0]  # the list lengths are STEPS + 1: 1 to 6


def _cell(w):
    @td.function
    def cell(s):
        return td.tanh(td.matmul(s, w))
    return cell


def _model(w):
    cell = _cell(w)

    def chain(example):
        root, steps = example
        s = td.constant(root[None])
        states = [s]
        for _ in range(steps):
            s = cell(s)
            states.append(s)
        return td.add_n(states)
    return chain


def _numpy(example, w=W):
    root, steps = example
    s = root[None]
    total = s.copy()
    for _ in range(steps):
        s = np.tanh(s @ w)
        total = total + s
    return total


EXAMPLES = list(zip(ROOTS, STEPS))


def test_sums_of_every_length_are_one_op_and_give_numpy_values():
    w = td.Variable(W)
    batched = td.loom.autobatch(_model(w))
    out = batched(EXAMPLES)
    np.testing.assert_allclose(out.numpy(), np.stack([_numpy(e) for e in EXAMPLES]), rtol=1e-12, atol=1e-12)
    kinds = sorted(type(info.op).__name__ for info in batched._registry.ops)
    assert kinds == ["CellOp", "RaggedSumOp"]  # one sum op for the lengths 2 to 6


def test_sums_of_different_lengths_at_one_depth_are_one_launch():
    cell = _cell(td.Variable(W))

    def fan(example):
        root, count = example
        s = td.constant(root[None])
        return td.add_n([cell(s) for _ in range(count + 2)])  # every sum at depth 2

    batched = td.loom.autobatch(fan)
    batched.count_launches = True
    out = batched(EXAMPLES).numpy()
    np.testing.assert_allclose(out, [(n + 2) * np.tanh(r[None] @ W) for r, n in EXAMPLES], rtol=1e-12)
    assert batched.last_stats[-1]["depth"] == 2  # the cells, then the sums of 2 to 7 values


def test_gradients_through_the_ragged_sum_match_finite_differences():
    w = td.Variable(W)
    batched = td.loom.autobatch(_model(w))
    weights = RNG.uniform(-1, 1, (len(EXAMPLES), 1, 4))
    with td.GradientTape() as tape:
        loss = td.reduce_sum(batched(EXAMPLES) * weights)
    grad = np.asarray(tape.gradient(loss, w))

    def numpy_loss():
        m = np.asarray(w.read_value())
        return float(np.sum(np.stack([_numpy(e, m) for e in EXAMPLES]) * weights))
    np.testing.assert_allclose(grad, finite_difference_gradient(numpy_loss, w), rtol=1e-6, atol=1e-8)


def test_a_sum_of_a_values_rows_and_constants_of_one_signature():
    emb = td.Variable(RNG.uniform(-1, 1, (5, 3)))

    def fn(example):
        a, b = example
        row = td.gather(emb, a)
        return td.add_n([row, td.constant(np.full(3, 0.5)), row * float(b)])

    examples = [(0, 1.0), (3, -2.0), (4, 0.0)]
    batched = td.loom.autobatch(fn)
    out = batched(examples).numpy()
    e = emb.numpy()
    np.testing.assert_allclose(out, [e[a] + 0.5 + e[a] * b for a, b in examples], rtol=1e-12)
    assert any(type(info.op).__name__ == "RaggedSumOp" for info in batched._registry.ops)


def test_a_sum_reading_a_variable_itself_keeps_an_op_of_its_own():
    bias = td.Variable(RNG.uniform(-1, 1, (1, 4)))
    w = td.Variable(W)
    cell = _model(w)

    def fn(example):
        return td.add_n([cell(example), bias])  # a shared value among the summands

    out = td.loom.autobatch(fn)(EXAMPLES).numpy()
    np.testing.assert_allclose(out, np.stack([_numpy(e) + bias.numpy() for e in EXAMPLES]), rtol=1e-12)


def test_sums_under_agenda_order_and_in_a_recording_for_a_function():
    w = td.Variable(W)
    expected = np.stack([_numpy(e) for e in EXAMPLES])
    agenda = td.loom.autobatch(_model(w), schedule="agenda")
    np.testing.assert_allclose(agenda(EXAMPLES).numpy(), expected, rtol=1e-12, atol=1e-12)

    batched = td.loom.autobatch(_model(w))

    @td.function
    def outputs(recording):
        return recording.outputs()
    np.testing.assert_allclose(outputs(batched.record(EXAMPLES)).numpy(), expected, rtol=1e-12, atol=1e-12)
