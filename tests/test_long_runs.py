"""Long runs and concurrency: threads calling one function and one loom get
results identical to one thread; resident memory stays flat over many calls,
loom training steps and retraces (with the trace cache's bound)."""

import ctypes
import gc
import threading
import warnings

import numpy as np
import pytest

import treadle as td

from tests.loom.loom_testlib import TreeLSTMWeights, random_tree, tree_lstm_loom, weave_tree


def _rss_bytes():
    # Freed heap handed back to the OS first (glibc), so that RSS counts live
    # memory, not the allocator's slack left by whatever ran before.
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


try:
    _LIBC = ctypes.CDLL("libc.so.6")
    _LIBC.malloc_trim  # glibc only
except (OSError, AttributeError):
    _LIBC = None


def _grows(step, warmup, repeats):
    """RSS growth over `repeats` calls of step() after `warmup` calls."""
    for _ in range(warmup):
        step()
    before = _rss_bytes()
    for _ in range(repeats):
        step()
    return _rss_bytes() - before


def _in_threads(fn, n=8, rounds=4):
    results, errors = [[] for _ in range(n)], []

    def work(i):
        try:
            for _ in range(rounds):
                results[i].append(fn())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return [r for per_thread in results for r in per_thread]


@pytest.fixture(scope="module")
def mlp():
    rng = np.random.default_rng(0)
    w1 = td.Variable(rng.normal(size=(16, 32)).astype(np.float32))
    w2 = td.Variable(rng.normal(size=(32, 4)).astype(np.float32))

    @td.function
    def f(x):
        h = td.nn.relu(x @ w1)
        total = td.constant(0.0)
        for i in td.range(3):
            total += td.reduce_sum(td.tanh(h @ w2) * td.cast(i, td.float32))
        return td.nn.softmax(h @ w2), total

    x = td.constant(rng.normal(size=(64, 16)).astype(np.float32))
    return f, x


def test_threads_calling_one_function_get_identical_results(mlp):
    f, x = mlp
    ref = [t.numpy() for t in f(x)]
    for out in _in_threads(lambda: [t.numpy() for t in f(x)]):
        for a, b in zip(out, ref):
            np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def tree_loom():
    weights = TreeLSTMWeights()
    loom = tree_lstm_loom(weights)
    rng = np.random.default_rng(1)
    w = loom.make_weaver()
    for _ in range(24):
        _, h = weave_tree(w, weights, random_tree(rng, 12, 50))
        w.add_output(h)
    return weights, loom, w.serialize()


def test_threads_running_one_loom_get_identical_results(tree_loom):
    weights, loom, message = tree_loom
    ref = loom.output_tensor(weights.h_ts, message).numpy()
    for out in _in_threads(lambda: loom.output_tensor(weights.h_ts, message).numpy()):
        np.testing.assert_array_equal(out, ref)


def test_rss_is_flat_over_many_function_calls(mlp):
    f, x = mlp
    assert _grows(lambda: f(x), warmup=2000, repeats=20000) < 8 << 20


def test_rss_is_flat_over_loom_training_steps(tree_loom):
    weights, loom, message = tree_loom
    opt = td.optimizers.SGD(1e-4)
    variables = weights.variables()

    def step():
        with td.GradientTape() as tape:
            loss = td.reduce_sum(loom.output_tensor(weights.h_ts, message))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    assert _grows(step, warmup=100, repeats=500) < 8 << 20


def test_rss_is_flat_over_retraces_with_the_cache_bound():
    @td.function
    def f(x):
        return x * 2.0 + 1.0

    f._max_traces = 64
    n = iter(range(1, 10 ** 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        growth = _grows(lambda: f(td.constant(np.zeros((0, next(n)), np.float32))), warmup=500, repeats=3000)
    assert len(f._cache) <= 64
    assert growth < 8 << 20  # unbounded, 3000 traces kept ~11.5 KB each: 34 MB
