"""td.loom.autobatch: values and gradients of per-example models against
NumPy recursions, finite differences and the same model woven by hand."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import BinaryTreeLSTM, ChildSumTreeLSTM, TreeDecoder, finite_difference_gradient

# Each test builds its model afresh, so its cells are new td.functions of the same Python functions.
pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")

TREES = [(1, (2, 3)), ((4, 5), 6), 0, ((1, 2), (3, (4, 5))), (6, 6)]
CHILD_SUM_TREES = [(1, [(2, []), (3, []), (4, [(5, [])])]), (0, []), (2, [(1, [(0, []), (3, [])])])]


def dense(g):
    return np.asarray(td.convert_to_tensor(g)) if isinstance(g, td.IndexedSlices) else np.asarray(g)


def test_binary_treelstm_values_match_numpy_and_hand_woven():
    model = BinaryTreeLSTM()
    out = td.loom.autobatch(model.root_h)(TREES)
    expected = np.stack([model.numpy_root_h(t) for t in TREES])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), model.hand_woven_root_h(TREES).numpy(), rtol=1e-10, atol=1e-12)


def test_binary_treelstm_output_structure_is_stacked():
    model = BinaryTreeLSTM()
    c, h = td.loom.autobatch(model.per_example)(TREES)
    assert c.shape == (len(TREES), model.H) and h.shape == (len(TREES), model.H)


def test_binary_treelstm_gradients_match_hand_woven_and_finite_differences():
    model = BinaryTreeLSTM()
    batched = td.loom.autobatch(model.root_h)
    weights = np.random.default_rng(5).uniform(-1, 1, (len(TREES), model.H))
    variables = list(model.vars.values())
    with td.GradientTape() as tape:
        loss = td.reduce_sum(batched(TREES) * weights)
    grads = tape.gradient(loss, variables)
    assert isinstance(grads[0], td.IndexedSlices)  # embedding rows: a sparse gradient
    with td.GradientTape() as tape:
        woven_loss = td.reduce_sum(model.hand_woven_root_h(TREES) * weights)
    woven = tape.gradient(woven_loss, variables)
    for g, w in zip(grads, woven):
        np.testing.assert_allclose(dense(g), dense(w), rtol=1e-9, atol=1e-12)

    def numpy_loss():
        return float(np.sum(np.stack([model.numpy_root_h(t) for t in TREES]) * weights))
    for name in ("W_node", "b_leaf", "embedding"):
        var = model.vars[name]
        fd = finite_difference_gradient(numpy_loss, var)
        k = next(i for i, x in enumerate(variables) if x is var)
        np.testing.assert_allclose(dense(grads[k]), fd, rtol=1e-5, atol=1e-7)


def test_child_sum_treelstm_values_and_gradients():
    model = ChildSumTreeLSTM()
    batched = td.loom.autobatch(model.root_h)
    weights = np.random.default_rng(6).uniform(-1, 1, (len(CHILD_SUM_TREES), model.H))
    with td.GradientTape() as tape:
        out = batched(CHILD_SUM_TREES)
        loss = td.reduce_sum(out * weights)
    np.testing.assert_allclose(out.numpy(), np.stack([model.numpy_root_h(t) for t in CHILD_SUM_TREES]),
                               rtol=1e-10, atol=1e-12)
    variables = list(model.vars.values())
    grads = tape.gradient(loss, variables)

    def numpy_loss():
        return float(np.sum(np.stack([model.numpy_root_h(t) for t in CHILD_SUM_TREES]) * weights))
    for var, g in zip(variables, grads):
        np.testing.assert_allclose(dense(g), finite_difference_gradient(numpy_loss, var), rtol=1e-5, atol=1e-7)


def test_cells_are_traced_once_per_signature_and_reused_across_calls():
    model = BinaryTreeLSTM()
    batched = td.loom.autobatch(model.root_h)
    batched(TREES)
    ops = len(batched._registry.ops)
    assert ops == 2  # leaf and node: one LoomOp each, for every example
    batched(TREES[:2])
    assert len(batched._registry.ops) == ops
    assert model.leaf.experimental_get_tracing_count() == 1


def test_plain_ops_on_per_example_values():
    rng = np.random.default_rng(7)
    emb = td.Variable(rng.normal(size=(5, 4)))
    scale = td.Variable(rng.normal(size=(4,)))

    def fn(ids):
        a, b = td.gather(emb, ids[0]), td.gather(emb, ids[1])
        s = a + b * 0.5
        joined = td.concat([td.tanh(s), a[:2]], 0)
        return joined * td.concat([scale, scale[:2]], 0), td.reduce_sum(s * s)

    examples = [(0, 1), (2, 3), (4, 0)]
    batched = td.loom.autobatch(fn)
    with td.GradientTape() as tape:
        joined, total = batched(examples)
        loss = td.reduce_sum(joined) + td.reduce_sum(total)
    E, sc = emb.numpy(), scale.numpy()
    for k, (i, j) in enumerate(examples):
        s = E[i] + E[j] * 0.5
        np.testing.assert_allclose(joined.numpy()[k], np.concatenate([np.tanh(s), E[i][:2]]) *
                                   np.concatenate([sc, sc[:2]]), rtol=1e-12)
        np.testing.assert_allclose(total.numpy()[k], np.sum(s * s), rtol=1e-12)
    g_emb, g_scale = tape.gradient(loss, [emb, scale])

    def numpy_loss():
        E, sc, out = emb.numpy(), scale.numpy(), 0.0
        for i, j in examples:
            s = E[i] + E[j] * 0.5
            out += np.sum(np.concatenate([np.tanh(s), E[i][:2]]) * np.concatenate([sc, sc[:2]])) + np.sum(s * s)
        return out
    np.testing.assert_allclose(dense(g_emb), finite_difference_gradient(numpy_loss, emb), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dense(g_scale), finite_difference_gradient(numpy_loss, scale), rtol=1e-5, atol=1e-7)


def test_float32_model_and_python_numbers():
    w = td.Variable(np.arange(3, dtype=np.float32))

    @td.function
    def cell(x):
        return td.tanh(x * w)

    out = td.loom.autobatch(lambda x: cell(td.constant(np.full(3, x, np.float32))) + 1.0)([0.5, -1.0])
    np.testing.assert_allclose(out.numpy(), np.tanh(np.array([[0.5], [-1.0]], np.float32) * np.arange(3)) + 1,
                               rtol=1e-6)


def test_recording_runs_inside_a_td_function_traced_once():
    model = BinaryTreeLSTM()
    batched = td.loom.autobatch(model.root_h)
    variables = list(model.vars.values())
    weights = td.constant(np.random.default_rng(8).uniform(-1, 1, (3, model.H)))

    @td.function
    def step(recording, weights):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(recording.outputs() * weights)
        return loss, tape.gradient(loss, variables)

    for trees in (TREES[:3], TREES[2:5], [((0, 1), 2), 3, (4, (5, 6))]):
        loss, grads = step(batched.record(trees), weights)
        with td.GradientTape() as tape:
            expected_loss = td.reduce_sum(batched(trees) * weights)
        expected = tape.gradient(expected_loss, variables)
        np.testing.assert_allclose(float(loss), float(expected_loss), rtol=1e-12)
        for g, e in zip(grads, expected):
            np.testing.assert_allclose(dense(g), dense(e), rtol=1e-9, atol=1e-12)
    assert step.experimental_get_tracing_count() == 1


def test_a_recording_of_examples_that_read_values_trains_in_one_traced_function():
    # The rounds run when the recording is made (the reads decide the
    # control flow); the recording holds all their work, run and
    # differentiated inside the td.function, traced once for both batches.
    model = TreeDecoder(max_depth=4)
    batched = td.loom.autobatch(model.per_example)
    names = ["W_l", "W_r"]
    variables = [model.vars[k] for k in names]

    @td.function
    def step(recording, weights):
        with td.GradientTape() as tape:
            total, _ = recording.outputs()
            loss = td.reduce_sum(total * weights)
        return total, tape.gradient(loss, variables)

    rng = np.random.default_rng(12)
    for batch in (rng.normal(0, 1.2, (6, 4)), rng.normal(0, 1.2, (6, 4))):
        weights = rng.normal(0, 1, (6, 4))
        total, grads = step(batched.record(list(batch)), td.constant(weights))
        np.testing.assert_allclose(total.numpy(), [model.numpy(z)[0] for z in batch], rtol=1e-12)

        def numpy_loss():
            return float(np.sum(np.stack([model.numpy(z)[0] for z in batch]) * weights))
        for var, grad in zip(variables, grads):
            np.testing.assert_allclose(np.asarray(grad), finite_difference_gradient(numpy_loss, var),
                                       rtol=1e-6, atol=1e-8)
    assert len(batched.last_stats) > 1  # the reads took rounds
    assert step.experimental_get_tracing_count() == 1


def test_cells_with_keywords_structures_and_tensor_conditions():
    W = td.Variable(np.arange(6.0).reshape(2, 3))

    @td.function
    def cell(x, scale=1.0, *, extra=None):
        y = td.matmul(td.reshape(x, [1, 2]), W)[0] * scale
        if td.reduce_sum(y) > 0:  # AutoGraph: a condition on a tensor inside the cell
            y = y + 1.0
        return {"y": y, "z": y + extra if extra is not None else y}

    def fn(example):
        x = td.constant(np.asarray(example, np.float64))
        a, b = td.split(x * 2.0, 2)
        out = cell(td.concat([b, a], 0), 2.0, extra=td.constant(np.ones(3)))
        out2 = cell(x, scale=0.5)
        return {"first": out["z"], "pair": (out2["y"], td.stack([a[0], b[0]]))}

    examples = [[1.0, 2.0], [3.0, -1.0], [-2.0, -1.0]]
    result = td.loom.autobatch(fn)(examples)
    w = W.numpy()

    def ref_cell(x, scale):
        y = x @ w * scale
        return y + 1.0 if y.sum() > 0 else y
    for i, e in enumerate(examples):
        x = np.array(e)
        a, b = x[:1] * 2, x[1:] * 2
        np.testing.assert_allclose(result["first"].numpy()[i], ref_cell(np.concatenate([b, a]), 2.0) + 1)
        np.testing.assert_allclose(result["pair"][0].numpy()[i], ref_cell(x, 0.5))
        np.testing.assert_allclose(result["pair"][1].numpy()[i], [a[0], b[0]])
