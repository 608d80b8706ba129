"""A small MLP trained on a synthetic task: one td.function training step
reaches the expected loss, with the same result as the eager step."""

import numpy as np
import pytest

import treadle as td


def make_data(seed=0, n=256, d=10, classes=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    teacher = rng.normal(size=(d, classes)).astype(np.float32)
    y = np.argmax(x @ teacher + 0.1 * rng.normal(size=(n, classes)), axis=1).astype(np.int32)
    return x, y


class MLP(td.Module):
    def __init__(self, sizes, seed=1):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.weights = [td.Variable(rng.normal(scale=np.sqrt(2.0 / a), size=(a, b)).astype(np.float32), name=f"w{i}")
                        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))]
        self.biases = [td.Variable(np.zeros(b, np.float32), name=f"b{i}") for i, b in enumerate(sizes[1:])]

    def __call__(self, x):
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = td.matmul(x, w) + b
            if i < len(self.weights) - 1:
                x = td.nn.relu(x)
        return x


def train(optimizer_kind, compiled, steps=150):
    x, y = make_data()
    model = MLP([10, 32, 32, 3])
    opt = td.optimizers.Adam(0.01) if optimizer_kind == "adam" else td.optimizers.SGD(0.1, momentum=0.9)

    def step(x, y):
        with td.GradientTape() as tape:
            logits = model(x)
            loss = td.reduce_mean(td.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    if compiled:
        step = td.function(step)
    xt, yt = td.constant(x), td.constant(y)
    losses = [float(step(xt, yt).numpy()) for _ in range(steps)]
    accuracy = float(np.mean(np.argmax(model(xt).numpy(), axis=1) == y))
    return losses, [v.numpy() for v in model.trainable_variables], accuracy, step


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_mlp_trains_in_one_function_step_like_eager(kind):
    losses_f, weights_f, acc_f, step = train(kind, compiled=True)
    losses_e, weights_e, acc_e, _ = train(kind, compiled=False)
    assert step.experimental_get_tracing_count() == 1
    assert losses_f[0] > 0.9  # about log(3) at the start
    assert losses_f[-1] < 0.1
    assert acc_f > 0.97
    np.testing.assert_allclose(losses_f, losses_e, rtol=1e-5, atol=1e-6)
    for a, b in zip(weights_f, weights_e):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert acc_f == acc_e


def test_gradient_graph_with_loop_and_branch_saves_and_loads(tmp_path):
    """A traced gradient computation (rewritten While/If, backward loop, library
    functions) is a complete graph: td.save / td.load run it without Python."""
    w = td.Variable(np.eye(3, dtype=np.float32) * 0.5)

    @td.function
    def step(x):
        with td.GradientTape() as tape:
            _, h = td.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, td.tanh(td.matmul(h, w) + x)), [0, x])
            h = td.cond(td.reduce_sum(h) > 0, lambda: h * 2.0, lambda: h)
            loss = td.reduce_sum(h)
        return loss, tape.gradient(loss, w)

    x = td.constant(np.ones((1, 3), np.float32))
    path = str(tmp_path / "step.td")
    td.save(step.get_concrete_function(x), path)
    loaded = td.load(path)
    for a, b in zip(step(x), loaded(x)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
