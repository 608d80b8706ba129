"""DyNet's peers of the automatic-batching benchmark against the NumPy
per-example references, forward and after one SGD step. Run in a process of
their own by test_autobatch_peers.py (importing DyNet turns on flush-to-zero
for the whole process)."""

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from peer_cases import decoder_case, f64  # noqa: E402

from bench.autobatch import child_sum as cs  # noqa: E402
from bench.autobatch import decoder as dec  # noqa: E402
from bench.treelstm import data, model  # noqa: E402

import autobatch_peers  # noqa: E402
import child_sum_ast  # noqa: E402


@pytest.fixture(scope="module")
def dy():
    pytest.importorskip("dynet_config")
    from bench.autobatch import dynet_models
    return dynet_models.load("agenda")


@pytest.mark.parametrize("autobatch", [False, True])
def test_dynet_decoder_matches_numpy(dy, autobatch):
    from bench.autobatch.dynet_models import TreeDecoder
    w, states = decoder_case()
    m = TreeDecoder(dy, w, dec.MAX_DEPTH, dec.LEARNING_RATE)
    np.testing.assert_allclose(m.infer(list(states), autobatch=autobatch),
                               np.stack([dec.decode(w, s)[0] for s in states]), atol=1e-4)
    m.train(list(states), autobatch=autobatch)
    expected = dec.sgd_step(f64(w), states.astype(np.float64))
    for k in ("W_c", "b_c"):
        np.testing.assert_allclose(m.weights()[k], expected[k], atol=1e-6)


def test_dynet_binary_treelstm_matches_numpy_and_pytorch(dy):
    from bench.autobatch.dynet_models import BinaryTreeLSTM
    trees, w = data.load_trees(limit=5), model.initial_weights()
    m = BinaryTreeLSTM(dy, w)
    np.testing.assert_allclose(m.infer(trees), np.stack([autobatch_peers.model_logits(w, t) for t in trees]),
                               atol=1e-6)
    pytest.importorskip("torch")
    from bench.treelstm import torch_peers
    steps, peer = torch_peers.make_steps(w)
    steps[("torch by height", "training")](trees)
    m.train(trees)
    after = m.weights()
    for k, p in peer.params.items():
        np.testing.assert_allclose(after[k], p.detach().numpy(), atol=1e-6, err_msg=k)


def test_dynet_child_sum_matches_numpy(dy):
    from bench.autobatch.dynet_models import ChildSumTreeLSTM
    functions, vocab = child_sum_ast.stdlib_functions(5)
    examples, w = cs.examples(functions), cs.initial_weights(vocab)
    m = ChildSumTreeLSTM(dy, w)
    np.testing.assert_allclose(m.infer(examples), np.stack([cs.logits(w, t) for t, _ in examples]), atol=1e-6)
