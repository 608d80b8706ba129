"""td.loom.autobatch's loom, built again when a call makes new ops (here an
op the examples of an earlier call did not use): the earlier ops' traces and backward
functions are reused, not made again, and the new loom computes what NumPy
does, with gradients."""

import numpy as np

import treadle as td
from autobatch_models import finite_difference_gradient

RNG = np.random.default_rng(47)


def _model():
    w = td.Variable(RNG.uniform(-1, 1, (3, 3)))

    @td.function
    def cell(s):
        return td.tanh(td.matmul(s, w))

    def fn(xs):
        total = td.add_n([cell(td.constant(x[None])) for x in xs])
        return total if len(xs) <= 3 else td.sigmoid(total)  # longer lists: one op more

    def numpy(xs, W):
        total = sum(np.tanh(x[None] @ W) for x in xs)
        return total if len(xs) <= 3 else 1 / (1 + np.exp(-total))
    return w, fn, numpy


def test_a_loom_built_again_reuses_the_traces_of_its_earlier_ops():
    w, fn, numpy = _model()
    batched = td.loom.autobatch(fn)
    first = [RNG.uniform(-1, 1, (n, 3)) for n in (2, 3, 2)]
    np.testing.assert_allclose(batched(first).numpy(), np.stack([numpy(xs, w.numpy()) for xs in first]), rtol=1e-12)
    registry = batched._registry
    kept = {name: traced for name, (_, traced) in registry._traces.items()}
    backward = {name: traced.function._loom_backward for name, traced in kept.items()}
    loom = registry.loom()
    second = [RNG.uniform(-1, 1, (n, 3)) for n in (4, 2, 5)]  # lists of 4 and 5 values: a new op
    weights = RNG.uniform(-1, 1, (3, 1, 3))
    with td.GradientTape() as tape:
        out = batched(second)
        loss = td.reduce_sum(out * weights)
    assert registry.loom() is not loom and len(registry._traces) > len(kept)
    for name, traced in kept.items():
        assert registry._traces[name][1] is traced  # not traced again
        assert traced.function._loom_backward is backward[name]  # nor differentiated again
    np.testing.assert_allclose(out.numpy(), np.stack([numpy(xs, w.numpy()) for xs in second]), rtol=1e-12)

    def numpy_loss():
        return float(np.sum(np.stack([numpy(xs, w.numpy()) for xs in second]) * weights))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, w)), finite_difference_gradient(numpy_loss, w),
                               rtol=1e-6, atol=1e-8)
