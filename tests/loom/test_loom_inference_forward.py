"""A loom run that no gradient will read runs its ops' forward functions
(inference) instead of their training functions: in a graph when no node
reads LoomRun's record output (the executor's output-wanted hook), eagerly
when no GradientTape watches the run's inputs. Outputs must be the same
either way, and gradients right whichever way earlier runs went."""

import numpy as np
import pytest

import treadle as td
from treadle.framework.op_execution import execute
from loom_testlib import TreeLSTMWeights, dense, random_tree, tree_lstm_loom, weave_tree
from test_loom_gradients import numeric_gradient, tree_loss


def _tree_lstm(seed=3, n_trees=12, **weights):
    w = TreeLSTMWeights(**weights)
    loom = tree_lstm_loom(w)
    rng = np.random.default_rng(seed)
    vocab = w.embedding.shape[0]
    trees = [random_tree(rng, int(rng.integers(1, 7)), vocab) for _ in range(n_trees)]
    weaver = loom.make_weaver()
    for t in trees:
        weaver.add_output(weave_tree(weaver, w, t)[1])
    labels = rng.integers(0, 3, n_trees)
    return w, loom, weaver, labels


def _raw_run(loom, weaver):
    inputs = [v.read_value() if isinstance(v, td.Variable) else v for v in loom._input_sources]
    return inputs, execute("LoomRun", [loom._schedule_tensor(weaver)] + inputs, loom._run_attrs)


def _raw_grad(loom, record, outs):
    grads = [td.ones_like(o) for o in outs]
    attrs = {"Tgrads": [g.dtype for g in grads], "Tinputs": loom._input_dtypes, "input_shapes": loom._input_shapes,
             "num_named_tensors": 0, "num_batch_inputs": 1}
    return execute("LoomRunGrad", [record] + grads, attrs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eager_inference_and_training_runs_give_identical_outputs(dtype):
    w, loom, weaver, _ = _tree_lstm(dtype=dtype)
    inference = loom.output_tensor(w.h_ts, weaver).numpy()
    with td.GradientTape() as tape:
        tape.watch(w.embedding)
        training = loom.output_tensor(w.h_ts, weaver).numpy()
    np.testing.assert_array_equal(inference, training)


def test_graph_inference_and_training_runs_give_identical_outputs():
    w, loom, weaver, labels = _tree_lstm(dtype=np.float32)
    msg = td.constant(weaver.serialize())

    @td.function
    def infer(schedule):
        return loom.output_tensor(w.h_ts, schedule)

    @td.function
    def train(schedule):
        with td.GradientTape() as tape:
            h = loom.output_tensor(w.h_ts, schedule)
            loss = tree_loss(w, h, labels)
        return h, tape.gradient(loss, [w.w_node])[0]

    np.testing.assert_array_equal(infer(msg).numpy(), train(msg)[0].numpy())


def test_an_unwatched_eager_run_saves_nothing_and_says_so():
    w, loom, weaver, _ = _tree_lstm()
    _, outs = _raw_run(loom, weaver)
    with pytest.raises(td.errors.InvalidArgumentError, match="saved nothing for a backward pass"):
        _raw_grad(loom, outs[-1], outs[:-1])
    with td.GradientTape() as tape:
        tape.watch(w.embedding)
        inputs, outs = _raw_run(loom, weaver)
    grads = _raw_grad(loom, outs[-1], outs[:-1])
    assert grads[0].shape[0] > 0  # the rows of the embedding's IndexedSlices


def test_a_paused_tape_does_not_make_a_run_save():
    w, loom, weaver, _ = _tree_lstm()
    with td.GradientTape() as tape:
        tape.watch(w.embedding)
        with tape.stop_recording():
            inputs, outs = _raw_run(loom, weaver)
    with pytest.raises(td.errors.InvalidArgumentError, match="saved nothing"):
        _raw_grad(loom, outs[-1], outs[:-1])


def test_eager_gradient_is_right_when_a_tape_starts_watching_after_inference_runs():
    w, loom, weaver, labels = _tree_lstm(vocab=8, embed=3, hidden=2, n_trees=4)

    def loss():
        return tree_loss(w, loom.output_tensor(w.h_ts, weaver), labels)

    before = float(loss())                   # no tape: inference
    with td.GradientTape(watch_accessed_variables=False) as tape:
        assert float(loss()) == before       # a tape that watches nothing yet: inference
        tape.watch(w.w_node)
        value = loss()                       # now watched: training
    assert float(value) == before
    grad = tape.gradient(value, w.w_node)
    np.testing.assert_allclose(grad.numpy(), numeric_gradient(loss, w.w_node), rtol=1e-5, atol=1e-8)


def test_graph_gradient_is_right_when_the_function_ran_for_inference_first():
    w, loom, weaver, labels = _tree_lstm(vocab=8, embed=3, hidden=2, n_trees=4)
    msg = td.constant(weaver.serialize())

    @td.function
    def loss_of(schedule):
        return tree_loss(w, loom.output_tensor(w.h_ts, schedule), labels)

    first = float(loss_of(msg))               # the function's graph: its record is read by nothing
    with td.GradientTape() as tape:
        value = loss_of(msg)                  # the same function, watched: its forward saves the record
    assert float(value) == first
    g_node, g_embed = tape.gradient(value, [w.w_node, w.embedding])
    np.testing.assert_allclose(g_node.numpy(), numeric_gradient(lambda: loss_of(msg), w.w_node),
                               rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(dense(g_embed), numeric_gradient(lambda: loss_of(msg), w.embedding),
                               rtol=1e-5, atol=1e-8)

    @td.function
    def grads_of(schedule):
        with td.GradientTape() as inner:
            v = tree_loss(w, loom.output_tensor(w.h_ts, schedule), labels)
        return inner.gradient(v, w.w_node)

    np.testing.assert_allclose(grads_of(msg).numpy(), g_node.numpy(), rtol=1e-12, atol=1e-14)


def test_float32_gradients_match_float64_ones():
    # The float32 path of the backward's scatter-adds (simd::AddRowsF32),
    # against the float64 path on the same weights and trees.
    grads = {}
    for dtype in (np.float64, np.float32):
        w, loom, weaver, labels = _tree_lstm(dtype=dtype, n_trees=40)
        with td.GradientTape() as tape:
            loss = tree_loss(w, loom.output_tensor(w.h_ts, weaver), labels)
        grads[dtype] = [dense(g) for g in tape.gradient(loss, [w.w_node, w.w_leaf, w.embedding])]
    for g32, g64 in zip(grads[np.float32], grads[np.float64]):
        np.testing.assert_allclose(g32, g64, rtol=2e-4, atol=2e-5)
