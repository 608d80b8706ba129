"""td.loom.autobatch under a td.GradientTape, when examples read values: the
rounds run unseen by the tape, and every node of every round runs once
more as one graph where the tape sees it (replay.py). The outputs and the
gradients must be NumPy's and finite differences', under depth and agenda
order, for outputs computed by any round (the last, an earlier one, none)."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import TreeDecoder, finite_difference_gradient

F64 = np.float64
ROOTS = np.random.default_rng(5).normal(0, 1.2, (7, 4))


@pytest.mark.parametrize("schedule", ["depth", "agenda"])
def test_a_decoder_trains_through_one_replayed_graph(schedule):
    model = TreeDecoder(max_depth=4)
    batched = td.loom.autobatch(model.per_example, schedule=schedule)
    weights = np.random.default_rng(6).normal(0, 1, (len(ROOTS), 4))
    with td.GradientTape() as tape:
        total, count = batched(list(ROOTS))
        loss = td.reduce_sum(total * weights)
    expected = [model.numpy(z) for z in ROOTS]
    np.testing.assert_allclose(total.numpy(), [t for t, _ in expected], rtol=1e-12)
    np.testing.assert_allclose(count.numpy(), [c for _, c in expected])
    stats = batched.last_stats
    assert len(stats) > 2  # rounds of reads, then the replay
    rounds_nodes = sum(s["nodes"] for s in stats[:-1])
    assert stats[-1]["nodes"] > rounds_nodes - 1  # the replay holds every round's nodes and the final round's
    names = ["W_l", "W_r", "w_p"]
    grads = tape.gradient(loss, [model.vars[k] for k in names])

    def numpy_loss():
        return float(np.sum(np.stack([model.numpy(z)[0] for z in ROOTS]) * weights))
    for name, grad in zip(names, grads):
        fd = finite_difference_gradient(numpy_loss, model.vars[name])
        if name == "w_p":  # read only by decisions: no gradient, as for any Python control flow
            assert grad is None or np.allclose(np.asarray(grad), 0.0)
            continue
        np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-6, atol=1e-8)


def test_outputs_from_earlier_rounds_rows_and_constants_have_their_gradients():
    w = td.Variable(np.random.default_rng(7).normal(0, 0.7, (3, 3)))
    emb = td.Variable(np.random.default_rng(8).normal(0, 1.0, (5, 3)))

    @td.function
    def cell(s):
        return td.tanh(td.matmul(s, w))

    def fn(example):
        kind, row = example
        early = cell(td.reshape(td.gather(emb, row), [1, 3]))
        if kind == "early":  # computed in round 1, returned after the example read it
            return early if float(td.reduce_sum(early)) < 10 else early * 2.0
        if kind == "row":
            return td.reshape(td.gather(emb, row), [1, 3])
        if kind == "constant":
            return td.constant(np.full((1, 3), 0.25))
        late = cell(early) if float(td.reduce_sum(early)) > -10 else early
        return cell(late)

    examples = [("late", 0), ("early", 1), ("row", 2), ("constant", 0), ("late", 4), ("early", 3)]
    weights = np.random.default_rng(9).normal(0, 1, (len(examples), 1, 3))
    batched = td.loom.autobatch(fn)
    with td.GradientTape() as tape:
        out = batched(examples)
        loss = td.reduce_sum(out * weights)
    g_w, g_emb = tape.gradient(loss, [w, emb])

    def numpy_out(W, E):
        def cell_np(s):
            return np.tanh(s @ W)
        rows = []
        for kind, row in examples:
            early = cell_np(E[row][None])
            rows.append({"early": early, "row": E[row][None], "constant": np.full((1, 3), 0.25),
                         "late": cell_np(cell_np(early))}[kind])
        return np.stack(rows)

    np.testing.assert_allclose(out.numpy(), numpy_out(w.numpy(), emb.numpy()), rtol=1e-12)

    def numpy_loss():
        return float(np.sum(numpy_out(w.numpy(), emb.numpy()) * weights))
    np.testing.assert_allclose(np.asarray(g_w), finite_difference_gradient(numpy_loss, w), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(td.convert_to_tensor(g_emb)), finite_difference_gradient(numpy_loss, emb),
                               rtol=1e-6, atol=1e-8)


def test_without_a_tape_the_rounds_are_the_call():
    model = TreeDecoder(max_depth=4)
    batched = td.loom.autobatch(model.per_example)
    total, _ = batched(list(ROOTS))
    np.testing.assert_allclose(total.numpy(), [model.numpy(z)[0] for z in ROOTS], rtol=1e-12)
    rounds = len(batched.last_stats)
    with td.GradientTape():
        batched(list(ROOTS))
    assert len(batched.last_stats) == rounds  # the final round is the replay's, not run on its own
