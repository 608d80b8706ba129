"""The automatic-batching benchmark's models compute what they should: the
tree decoder's NumPy reference against finite differences, and each peer
(DyNet, PyTorch) and treadle's autobatched models against the NumPy
per-example references, forward and after one SGD step. Peers that are not
installed are skipped: they are optional extras of the benchmarks."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from peer_cases import ROOT, decoder_case, f64  # noqa: E402

from bench.autobatch import child_sum as cs  # noqa: E402
from bench.autobatch import decoder as dec  # noqa: E402
from bench.treelstm import data, model  # noqa: E402

import autobatch_peers  # noqa: E402
import child_sum_ast  # noqa: E402


def test_decoder_trees_have_about_24_nodes():
    w, states = dec.initial_weights(), dec.initial_states(1024)
    sizes = dec.tree_sizes(w, states)
    assert 21 < sizes.mean() < 27 and sizes.min() == 1 and sizes.max() <= 2 ** (dec.MAX_DEPTH + 1) - 1


def test_decoder_gradients_match_finite_differences():
    w, states = decoder_case(4)
    w, states = f64(w), states.astype(np.float64)
    grads = dec.gradients(w, states)

    def loss(weights):
        return dec.loss(np.stack([dec.decode(weights, s)[0] for s in states]))

    for name, index in [("W_c", (3, 5)), ("W_c", (100, 400)), ("b_c", (7,)), ("b_c", (300,))]:
        plus, minus = f64(w), f64(w)
        plus[name][index] += 1e-6
        minus[name][index] -= 1e-6
        assert grads[name][index] == pytest.approx((loss(plus) - loss(minus)) / 2e-6, rel=1e-5, abs=1e-12)


def test_torch_frontier_decoder_matches_numpy():
    torch = pytest.importorskip("torch")
    from bench.autobatch.torch_decoder import FrontierDecoder
    w, states = decoder_case()
    peer = FrontierDecoder(w)
    out, nodes = peer.forward(torch.from_numpy(states))
    np.testing.assert_allclose(out.detach().numpy(), np.stack([dec.decode(w, s)[0] for s in states]), atol=1e-4)
    np.testing.assert_array_equal(nodes.numpy(), dec.tree_sizes(w, states))
    peer.train(torch.from_numpy(states))
    expected = dec.sgd_step(f64(w), states.astype(np.float64))
    for k in ("W_c", "b_c"):
        np.testing.assert_allclose(peer.weights()[k], expected[k], atol=1e-6)


def test_dynet_peers_match_numpy_in_their_own_process():
    """DyNet's library turns on flush-to-zero for the whole process when it
    is imported (it is built with fast math), which would change treadle's
    own results in later tests: its checks run in a process of their own."""
    pytest.importorskip("dynet_config")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(pathlib.Path(__file__).with_name("dynet_checks.py"))],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.fixture(scope="module")
def treadle_models():
    from bench.autobatch import treadle_models
    if not treadle_models.available():
        pytest.skip("this treadle has no td.loom.autobatch")
    return treadle_models


def test_autobatched_treelstms_match_numpy(treadle_models):
    from autobatch_treelstm import AutobatchedTreeLSTM
    trees, w = data.load_trees(limit=5), model.initial_weights()
    np.testing.assert_allclose(AutobatchedTreeLSTM(w).infer(trees),
                               np.stack([autobatch_peers.model_logits(w, t) for t in trees]), atol=1e-6)
    functions, vocab = child_sum_ast.stdlib_functions(5)
    examples, w = cs.examples(functions), cs.initial_weights(vocab)
    child_sum = treadle_models.ChildSumTreeLSTM(w)
    np.testing.assert_allclose(child_sum.infer(examples), np.stack([cs.logits(w, t) for t, _ in examples]),
                               atol=1e-6)


def test_autobatched_child_sum_trains_as_torch_autograd(treadle_models):
    """One SGD step of the recorded child-sum model (its td.function train step)
    against PyTorch autograd on the same per-example recursion."""
    torch = pytest.importorskip("torch")
    functions, vocab = child_sum_ast.stdlib_functions(5)
    examples, w = cs.examples(functions), cs.initial_weights(vocab)
    model_ = treadle_models.ChildSumTreeLSTM(w, learning_rate=0.01)
    import treadle as td
    model_.train(examples, td.constant([label for _, label in examples], dtype=td.int32))
    params = {k: torch.tensor(v, requires_grad=True) for k, v in w.items()}

    def visit(node):
        kind, kids = node
        states = [visit(k) for k in kids]
        i, o, u, f_x = (params["embedding"][kind] @ params["w"] + params["b"]).chunk(4)
        if states:
            i_h, o_h, u_h = (sum(h for _, h in states) @ params["u_iou"]).chunk(3)
            i, o, u = i + i_h, o + o_h, u + u_h
        c = torch.sigmoid(i) * torch.tanh(u)
        for c_k, h_k in states:
            c = c + torch.sigmoid(f_x + h_k @ params["u_f"]) * c_k
        return c, torch.sigmoid(o) * torch.tanh(c)

    logits = torch.stack([visit(t)[1] @ params["w_out"] + params["b_out"] for t, _ in examples])
    torch.nn.functional.cross_entropy(logits, torch.tensor([label for _, label in examples])).backward()
    for k, var in model_.vars.items():
        np.testing.assert_allclose(var.numpy(), w[k] - 0.01 * params[k].grad.numpy(), atol=1e-6, err_msg=k)


@pytest.mark.parametrize("order", ["depth_first", "by_level"])
def test_autobatched_decoder_matches_numpy(treadle_models, order):
    w, states = decoder_case()
    m = treadle_models.TreeDecoder(w, dec.MAX_DEPTH, dec.LEARNING_RATE, order=order)
    np.testing.assert_allclose(m.infer(states), np.stack([dec.decode(w, s)[0] for s in states]), atol=1e-4)
    m.train(states)
    expected = dec.sgd_step(f64(w), states.astype(np.float64))
    for k in ("W_c", "b_c"):
        np.testing.assert_allclose(m.weights()[k], expected[k], atol=1e-6)
    counts = treadle_models.launch_counts(m.batched, list(states))
    assert counts["lower_bound"] <= counts["default"] <= counts["nodes"]
    # a round per node of the largest tree (depth first), or per depth (level by level)
    largest, deepest = dec.tree_sizes(w, states).max(), dec.MAX_DEPTH + 1
    assert 2 <= counts["rounds"] <= (largest + 1 if order == "depth_first" else deepest + 1)
