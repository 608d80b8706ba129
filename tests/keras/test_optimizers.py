"""td.optimizers (= td.keras.optimizers) and the learning-rate schedules
against Keras's update formulas, computed by hand in NumPy over a few steps,
eagerly and inside a td.function."""

import math

import numpy as np
import pytest

import treadle as td

pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")
opt = td.keras.optimizers
sched = td.keras.optimizers.schedules
GRADS = [np.array([0.5, -1.0, 2.0]), np.array([-0.3, 0.2, 1.0]), np.array([1.5, 0.0, -0.5])]
START = np.array([1.0, 2.0, -3.0])


def run(optimizer, traced=False):
    var = td.Variable(START.astype(np.float32))

    def step(g):
        optimizer.apply_gradients([(g, var)])

    if traced:
        step = td.function(step)
    for g in GRADS:
        step(td.constant(g.astype(np.float32)))
    return var.numpy()


def sgd_reference(lr, momentum, nesterov):
    var, v = START.copy(), np.zeros(3)
    for g in GRADS:
        v = momentum * v - lr * g
        var = var + (momentum * v - lr * g if nesterov else v)
    return var


def adam_reference(lr, b1, b2, eps, weight_decay=0.0):
    var, m, v = START.copy(), np.zeros(3), np.zeros(3)
    for t, g in enumerate(GRADS, 1):
        var = var - var * weight_decay * lr
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        var = var - lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return var


def adagrad_reference(lr, initial, eps):
    var, acc = START.copy(), np.full(3, initial)
    for g in GRADS:
        acc = acc + g * g
        var = var - lr * g / np.sqrt(acc + eps)
    return var


def rmsprop_reference(lr, rho, momentum, eps, centered):
    var, v, m, mg = START.copy(), np.zeros(3), np.zeros(3), np.zeros(3)
    for g in GRADS:
        v = rho * v + (1 - rho) * g * g
        denom = v
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = v - mg * mg
        step = lr * g / np.sqrt(denom + eps)
        if momentum:
            m = momentum * m + step
            step = m
        var = var - step
    return var


CASES = [
    (lambda: opt.SGD(0.1), sgd_reference(0.1, 0.0, False)),
    (lambda: opt.SGD(0.1, momentum=0.9), sgd_reference(0.1, 0.9, False)),
    (lambda: opt.SGD(0.1, momentum=0.9, nesterov=True), sgd_reference(0.1, 0.9, True)),
    (lambda: opt.Adam(0.1), adam_reference(0.1, 0.9, 0.999, 1e-7)),
    (lambda: opt.AdamW(0.1, weight_decay=0.05), adam_reference(0.1, 0.9, 0.999, 1e-7, 0.05)),
    (lambda: opt.Adagrad(0.1), adagrad_reference(0.1, 0.1, 1e-7)),
    (lambda: opt.Adagrad(0.1, initial_accumulator_value=0.0, epsilon=1e-3), adagrad_reference(0.1, 0.0, 1e-3)),
    (lambda: opt.RMSprop(0.01), rmsprop_reference(0.01, 0.9, 0.0, 1e-7, False)),
    (lambda: opt.RMSprop(0.01, rho=0.8, momentum=0.5), rmsprop_reference(0.01, 0.8, 0.5, 1e-7, False)),
    (lambda: opt.RMSprop(0.01, centered=True, epsilon=1e-2), rmsprop_reference(0.01, 0.9, 0.0, 1e-2, True)),
]


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "td.function"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_updates_match_keras_formulas(case, traced):
    make, want = CASES[case]
    np.testing.assert_allclose(run(make(), traced), want, rtol=2e-5, atol=2e-6)


def test_keras_optimizers_are_td_optimizers():
    for name in ("SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Optimizer"):
        assert getattr(opt, name) is getattr(td.optimizers, name)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="weight_decay"):
        opt.AdamW(weight_decay=-1)
    with pytest.raises(ValueError, match="rho and momentum"):
        opt.RMSprop(rho=1.5)
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        opt.Adagrad(initial_accumulator_value=-0.1)


STEPS = [0, 1, 5, 10, 15, 20, 35]


def check(schedule, formula):
    got = [float(schedule(s)) for s in STEPS]
    np.testing.assert_allclose(got, [formula(s) for s in STEPS], rtol=1e-5, atol=1e-7)
    traced = td.function(lambda s: schedule(s))
    np.testing.assert_allclose([float(traced(td.constant(s, td.int64))) for s in STEPS], got, rtol=1e-6)


def test_exponential_and_inverse_time_decay():
    check(sched.ExponentialDecay(0.1, 10, 0.5), lambda s: 0.1 * 0.5 ** (s / 10))
    check(sched.ExponentialDecay(0.1, 10, 0.5, staircase=True), lambda s: 0.1 * 0.5 ** (s // 10))
    check(sched.InverseTimeDecay(0.1, 10, 0.5), lambda s: 0.1 / (1 + 0.5 * s / 10))
    check(sched.InverseTimeDecay(0.1, 10, 0.5, staircase=True), lambda s: 0.1 / (1 + 0.5 * (s // 10)))


def test_piecewise_constant_decay():
    # Keras's documented example: 1.0 for the first 100001 steps, 0.5 for the next 10000, 0.1 after.
    check(sched.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1]), lambda s: 1.0 if s <= 10 else 0.5 if s <= 20 else 0.1)
    with pytest.raises(ValueError, match="one more entry"):
        sched.PiecewiseConstantDecay([1, 2], [1.0, 0.5])


def test_polynomial_decay():
    def poly(s, cycle=False, power=1.0):
        steps = 20.0
        if cycle:
            steps = 20.0 * max(1.0, math.ceil(s / 20.0))
        else:
            s = min(s, 20)
        return (0.1 - 0.01) * (1 - s / steps) ** power + 0.01
    check(sched.PolynomialDecay(0.1, 20, 0.01), poly)
    check(sched.PolynomialDecay(0.1, 20, 0.01, power=2.0), lambda s: poly(s, power=2.0))
    check(sched.PolynomialDecay(0.1, 20, 0.01, cycle=True), lambda s: poly(s, cycle=True))


def test_cosine_decay_with_and_without_warmup():
    def cosine(s, lr=0.1, alpha=0.1):
        s = min(s, 20)
        return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / 20)) + alpha)
    check(sched.CosineDecay(0.1, 20, alpha=0.1), cosine)
    warm = sched.CosineDecay(0.0, 20, alpha=0.1, warmup_target=0.1, warmup_steps=10)
    check(warm, lambda s: 0.1 * s / 10 if s < 10 else cosine(s - 10))


def test_a_schedule_drives_an_optimizer():
    schedule = sched.PiecewiseConstantDecay([1], [1.0, 0.1])
    optimizer = opt.SGD(schedule)
    var = td.Variable(np.zeros(1, np.float32))
    for _ in range(3):
        optimizer.apply_gradients([(td.constant([1.0]), var)])
    np.testing.assert_allclose(var.numpy(), [-(1.0 + 1.0 + 0.1)], rtol=1e-6)  # steps 0 and 1 at 1.0, step 2 at 0.1
