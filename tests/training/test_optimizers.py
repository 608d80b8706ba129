"""td.optimizers against hand-computed NumPy updates, eagerly and inside a td.function."""

import numpy as np
import pytest

import treadle as td


def _numpy_sgd(w, grads, lr, momentum=0.0, nesterov=False):
    v = np.zeros_like(w)
    for g in grads:
        if momentum:
            v = momentum * v - lr * g
            w = w + (momentum * v - lr * g if nesterov else v)
        else:
            w = w - lr * g
    return w


def _numpy_adam(w, grads, lr, b1=0.9, b2=0.999, eps=1e-7):
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - lr_t * m / (np.sqrt(v) + eps)
    return w


RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((3, 4))
GRADS = [RNG.standard_normal((3, 4)) for _ in range(4)]


@pytest.mark.parametrize("make,reference", [
    (lambda: td.optimizers.SGD(0.1), lambda: _numpy_sgd(W0, GRADS, 0.1)),
    (lambda: td.optimizers.SGD(0.1, momentum=0.9), lambda: _numpy_sgd(W0, GRADS, 0.1, 0.9)),
    (lambda: td.optimizers.SGD(0.1, momentum=0.9, nesterov=True), lambda: _numpy_sgd(W0, GRADS, 0.1, 0.9, True)),
    (lambda: td.optimizers.Adam(0.01), lambda: _numpy_adam(W0, GRADS, 0.01)),
], ids=["sgd", "momentum", "nesterov", "adam"])
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "td.function"])
def test_updates_match_numpy(make, reference, in_function):
    opt = make()
    w = td.Variable(W0)

    def step(g):
        opt.apply_gradients([(g, w)])

    if in_function:
        step = td.function(step)
    for g in GRADS:
        step(td.constant(g))
    np.testing.assert_allclose(w.numpy(), reference(), rtol=1e-10, atol=1e-12)
    assert int(opt.iterations.numpy()) == len(GRADS)


def test_none_gradients_are_skipped():
    opt = td.optimizers.SGD(0.5)
    a, b = td.Variable(1.0), td.Variable(2.0)
    opt.apply_gradients([(td.constant(1.0), a), (None, b)])
    assert a.numpy() == 0.5 and b.numpy() == 2.0


def test_rejects_non_variables():
    with pytest.raises(TypeError, match="expects td.Variables"):
        td.optimizers.SGD(0.1).apply_gradients([(td.constant(1.0), td.constant(1.0))])
