"""td.optimizers.SGD and Adam against updates computed by hand with NumPy,
eagerly and inside a td.function training step; slots made once; sparse
(IndexedSlices) updates."""

import numpy as np
import pytest

import treadle as td

rng = np.random.default_rng(3)


def numpy_sgd(var, grads, lr, momentum=0.0, nesterov=False):
    var = var.copy()
    velocity = np.zeros_like(var)
    for g in grads:
        if momentum == 0:
            var -= lr * g
        else:
            velocity = momentum * velocity - lr * g
            var += momentum * velocity - lr * g if nesterov else velocity
    return var


def numpy_adam(var, grads, lr, beta_1=0.9, beta_2=0.999, eps=1e-7):
    var = var.copy()
    m = np.zeros_like(var)
    v = np.zeros_like(var)
    for t, g in enumerate(grads, start=1):
        m = m + (g - m) * (1 - beta_1)
        v = v + (g * g - v) * (1 - beta_2)
        alpha = lr * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        var = var - alpha * m / (np.sqrt(v) + eps)
    return var


def make_optimizer(kind, **kw):
    return getattr(td.optimizers, kind)(**kw)


CONFIGS = [
    ("SGD", dict(learning_rate=0.1), lambda v, g: numpy_sgd(v, g, 0.1)),
    ("SGD", dict(learning_rate=0.05, momentum=0.9), lambda v, g: numpy_sgd(v, g, 0.05, 0.9)),
    ("SGD", dict(learning_rate=0.05, momentum=0.5, nesterov=True), lambda v, g: numpy_sgd(v, g, 0.05, 0.5, True)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True), lambda v, g: numpy_sgd(v, g, 0.1, 0.9, True)),
    ("Adam", dict(learning_rate=0.01), lambda v, g: numpy_adam(v, g, 0.01)),
    ("Adam", dict(learning_rate=0.1, beta_1=0.5, beta_2=0.9, epsilon=1e-3),
     lambda v, g: numpy_adam(v, g, 0.1, 0.5, 0.9, 1e-3)),
]
IDS = [f"{k}-{kw}" for k, kw, _ in CONFIGS]


@pytest.mark.parametrize("kind,kwargs,reference", CONFIGS, ids=IDS)
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_steps_match_numpy(kind, kwargs, reference, in_function):
    start = rng.normal(size=(3, 2))
    grads = [rng.normal(size=(3, 2)) for _ in range(5)]
    var = td.Variable(start)
    opt = make_optimizer(kind, **kwargs)

    def step(g):
        opt.apply_gradients([(g, var)])

    if in_function:
        step = td.function(step)
    for g in grads:
        step(td.constant(g))
    np.testing.assert_allclose(var.numpy(), reference(start, grads), rtol=1e-10, atol=1e-12)
    assert int(opt.iterations.numpy()) == 5


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_float32_variables(kind):
    start = rng.normal(size=(4,)).astype(np.float32)
    grads = [rng.normal(size=(4,)).astype(np.float32) for _ in range(3)]
    var = td.Variable(start)
    opt = make_optimizer(kind, learning_rate=0.01)
    for g in grads:
        opt.apply_gradients(zip([td.constant(g)], [var]))
    ref = numpy_sgd(start.astype(np.float64), grads, 0.01) if kind == "SGD" else \
        numpy_adam(start.astype(np.float64), [g.astype(np.float64) for g in grads], 0.01)
    assert var.dtype == td.float32
    np.testing.assert_allclose(var.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_slots_are_made_once_and_listed():
    a, b = td.Variable(np.ones((2, 2))), td.Variable(np.zeros(3))
    opt = td.optimizers.Adam(0.1)

    @td.function
    def step():
        opt.apply_gradients([(td.ones_like(a), a), (td.ones_like(b), b)])

    step()
    step()
    assert step.experimental_get_tracing_count() == 1
    assert len(opt.variables) == 1 + 4  # iterations + m and v per variable
    assert opt.get_slot(a, "m").shape == a.shape
    step()
    assert len(opt.variables) == 5
    assert int(opt.iterations.numpy()) == 3
    sgd = td.optimizers.SGD(0.1)
    sgd.apply_gradients([(td.ones_like(a), a)])
    assert len(sgd.variables) == 1  # no momentum: no slots


def test_none_gradients_are_skipped():
    a, b = td.Variable([1.0, 2.0]), td.Variable([3.0])
    td.optimizers.SGD(0.5).apply_gradients([(td.constant([1.0, 1.0]), a), (None, b)])
    np.testing.assert_allclose(a.numpy(), [0.5, 1.5])
    np.testing.assert_allclose(b.numpy(), [3.0])
    c, d = td.Variable(1.0), td.Variable(2.0)  # scalars too
    td.optimizers.SGD(0.5).apply_gradients([(td.constant(1.0), c), (None, d)])
    assert c.numpy() == 0.5 and d.numpy() == 2.0


def test_bad_arguments():
    a = td.Variable([1.0])
    with pytest.raises(TypeError, match="expects td.Variables"):
        td.optimizers.SGD().apply_gradients([(td.constant([1.0]), td.constant([1.0]))])
    with pytest.raises(TypeError, match="dtype"):
        td.optimizers.SGD().apply_gradients([(td.constant([1.0], td.float64), a)])
    with pytest.raises(ValueError, match="momentum"):
        td.optimizers.SGD(momentum=1.5)


def test_defaults_match_tensorflow():
    sgd, adam = td.optimizers.SGD(), td.optimizers.Adam()
    assert sgd.learning_rate == 0.01 and sgd.momentum == 0.0
    assert adam.learning_rate == 0.001 and (adam.beta_1, adam.beta_2, adam.epsilon) == (0.9, 0.999, 1e-7)


def test_learning_rate_schedule_callable():
    a = td.Variable([0.0])
    opt = td.optimizers.SGD(learning_rate=lambda step: 0.1 / (1.0 + td.cast(step, td.float32)))
    for _ in range(2):
        opt.apply_gradients([(td.constant([1.0]), a)])
    np.testing.assert_allclose(a.numpy(), [-(0.1 + 0.05)], rtol=1e-6)


def test_minimize_with_callable_loss():
    w = td.Variable([2.0])
    opt = td.optimizers.SGD(0.25)
    opt.minimize(lambda: td.reduce_sum(w * w), [w])
    np.testing.assert_allclose(w.numpy(), [2.0 - 0.25 * 4.0])


def test_learning_rate_callable_without_argument():
    a = td.Variable([0.0])
    opt = td.optimizers.SGD(learning_rate=lambda: 0.5)
    opt.apply_gradients([(td.constant([1.0]), a)])
    np.testing.assert_allclose(a.numpy(), [-0.5])


# ---------------------------------------------------------------- IndexedSlices gradients

def _slices(rows, indices, width, dtype=np.float64):
    values = rng.normal(size=(len(indices), width)).astype(dtype)
    return values, td.IndexedSlices(td.constant(values), td.constant(np.array(indices, np.int64)),
                                    td.constant([rows, width]))


def _apply_steps(opt, var, grads, in_function):
    def step(g):
        opt.apply_gradients([(g, var)])

    if in_function:
        step = td.function(step)
    for g in grads:
        step(g)


SPARSE_CONFIGS = [
    ("SGD", dict(learning_rate=0.1)),
    ("SGD", dict(learning_rate=0.05, momentum=0.9)),
    ("SGD", dict(learning_rate=0.05, momentum=0.5, nesterov=True)),
    ("Adam", dict(learning_rate=0.01)),
    ("Adam", dict(learning_rate=0.1, beta_1=0.5, beta_2=0.9, epsilon=1e-3)),
]
SPARSE_IDS = [f"{k}-{kw}" for k, kw in SPARSE_CONFIGS]


@pytest.mark.parametrize("kind,kwargs", SPARSE_CONFIGS, ids=SPARSE_IDS)
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_update_equals_dense_update_with_unique_indices(kind, kwargs, in_function, dtype):
    start = rng.normal(size=(6, 2)).astype(dtype)
    index_sets = [[4, 0, 2], [1], [5, 4, 3, 2], [0, 5]]
    sparse = [_slices(6, ids, 2, dtype)[1] for ids in index_sets]
    dense = [td.convert_to_tensor(g) for g in sparse]
    results = []
    for grads in (sparse, dense):
        var = td.Variable(start)
        _apply_steps(make_optimizer(kind, **kwargs), var, grads, in_function)
        results.append(var.numpy())
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == np.float64 else dict(rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(results[0], results[1], **tol)
    if kind == "SGD" and not kwargs.get("nesterov"):
        np.testing.assert_array_equal(results[0], results[1])  # the same operations, rounded the same way


@pytest.mark.parametrize("kwargs", [c[1] for c in SPARSE_CONFIGS if c[0] == "SGD"])
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_sparse_sgd_with_duplicates_equals_dense_of_the_summed_gradient(kwargs, in_function):
    start = rng.normal(size=(5, 3))
    grads = [_slices(5, ids, 3)[1] for ids in ([1, 1, 4, 1], [0, 4, 4], [2, 2])]
    var = td.Variable(start)
    _apply_steps(td.optimizers.SGD(**kwargs), var, grads, in_function)
    want = numpy_sgd(start, [td.convert_to_tensor(g).numpy() for g in grads], kwargs["learning_rate"],
                     kwargs.get("momentum", 0.0), kwargs.get("nesterov", False))
    np.testing.assert_allclose(var.numpy(), want, rtol=1e-12, atol=1e-14)


def numpy_sparse_adam(var, grads, lr, beta_1=0.9, beta_2=0.999, eps=1e-7):
    """TensorFlow's (Keras') Adam for IndexedSlices, (values, indices) pairs:
    m -= m * (1 - beta_1); m[indices] += values * (1 - beta_1) (duplicates
    add); v likewise with values**2; var -= alpha * m / (sqrt(v) + eps)."""
    var = var.copy()
    m = np.zeros_like(var)
    v = np.zeros_like(var)
    for t, (values, indices) in enumerate(grads, start=1):
        m -= m * (1 - beta_1)
        np.add.at(m, indices, values * (1 - beta_1))
        v -= v * (1 - beta_2)
        np.add.at(v, indices, values * values * (1 - beta_2))
        alpha = lr * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        var = var - alpha * m / (np.sqrt(v) + eps)
    return var


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_sparse_adam_with_duplicates_follows_tensorflow(in_function):
    start = rng.normal(size=(5, 2))
    parts = [_slices(5, ids, 2) for ids in ([3, 3, 0], [1, 3, 1, 1], [4])]
    var = td.Variable(start)
    opt = td.optimizers.Adam(learning_rate=0.05, beta_1=0.8, beta_2=0.9)
    _apply_steps(opt, var, [g for _, g in parts], in_function)
    want = numpy_sparse_adam(start, [(values, np.array(ids)) for (values, _), ids in
                                     zip(parts, ([3, 3, 0], [1, 3, 1, 1], [4]))], 0.05, 0.8, 0.9)
    np.testing.assert_allclose(var.numpy(), want, rtol=1e-12, atol=1e-14)
    # With duplicates this is not the dense update of the summed gradient (v sums squares).
    dense_var = td.Variable(start)
    _apply_steps(td.optimizers.Adam(learning_rate=0.05, beta_1=0.8, beta_2=0.9), dense_var,
                 [td.convert_to_tensor(g) for _, g in parts], in_function)
    assert not np.allclose(dense_var.numpy(), var.numpy())
    assert int(opt.iterations.numpy()) == 3


def test_sparse_gradient_of_the_wrong_dtype_is_rejected():
    var = td.Variable(np.zeros((3, 2), np.float32))
    _, g = _slices(3, [0], 2, np.float64)
    with pytest.raises(TypeError, match="gradient of dtype float64"):
        td.optimizers.SGD(0.1).apply_gradients([(g, var)])


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_minimize_an_embedding_loss(kind):
    table = td.Variable(rng.normal(size=(8, 3)))
    ids = td.constant([7, 2, 7])
    opt = make_optimizer(kind, learning_rate=0.1)
    before = table.numpy()
    opt.minimize(lambda: td.reduce_sum(td.gather(table, ids) ** 2), [table])
    after = table.numpy()
    changed = np.any(after != before, axis=1)
    if kind == "SGD":
        assert changed.tolist() == [False, False, True, False, False, False, False, True]
        want = before.copy()
        want[2] -= 0.1 * 2 * before[2]
        want[7] -= 0.1 * 4 * before[7]
        np.testing.assert_allclose(after, want, rtol=1e-12)
    else:
        assert changed[[2, 7]].all()
