"""td.random: the Philox generator against a Python reference, distributions,
and TensorFlow's global/op seed rules."""

import numpy as np
import pytest

import treadle as td
from treadle import _core

MASK32 = 0xFFFFFFFF
DEFAULT_GRAPH_SEED = 87654321


@pytest.fixture(autouse=True)
def _fresh_seed_state():
    td.random.set_seed(None)
    yield
    td.random.set_seed(None)


def philox4x32_10(counter, key):
    """Reference Philox4x32-10 in plain Python."""
    c = list(counter)
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & MASK32, p1 & MASK32, ((p0 >> 32) ^ c[3] ^ k1) & MASK32, p0 & MASK32]
    return c


def reference_uniform_float32(n, seed, seed2, first_block=0):
    out = []
    block = first_block
    while len(out) < n:
        words = philox4x32_10([block & MASK32, block >> 32, seed2 & MASK32, seed2 >> 32],
                              [seed & MASK32, seed >> 32])
        out.extend((w >> 8) * 2.0**-24 for w in words)
        block += 1
    return np.array(out[:n], np.float32)


def test_reference_philox_known_answers():
    # Known-answer vectors of Philox4x32-10 from its authors (Random123).
    assert philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox4x32_10([MASK32] * 4, [MASK32, MASK32]) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@pytest.mark.parametrize("seed,seed2", [(1, 2), (87654321, 5), (2**40 + 3, 2**33 + 7), (0, 2**31 - 1)])
def test_uniform_is_philox(seed, seed2):
    first = td.raw_ops.RandomUniform(shape=[10], dtype=td.float32, seed=seed, seed2=seed2)
    np.testing.assert_array_equal(first.numpy(), reference_uniform_float32(10, seed, seed2))
    # The next call continues the stream after the 3 blocks the first one used.
    second = td.raw_ops.RandomUniform(shape=[5], dtype=td.float32, seed=seed, seed2=seed2)
    np.testing.assert_array_equal(second.numpy(), reference_uniform_float32(5, seed, seed2, first_block=3))


def test_element_values_do_not_depend_on_the_output_shape():
    td.random.set_seed(3)
    a = td.random.uniform([15], seed=4).numpy()
    td.random.set_seed(3)
    b = td.random.uniform([2, 4], seed=4).numpy()
    np.testing.assert_array_equal(b.ravel(), a[:8])


def test_random_ops_are_stateful():
    for name in ("RandomUniform", "RandomStandardNormal", "RandomUniformInt"):
        assert _core.op_def(name)["stateful"]


# ---------------------------------------------------------------- distributions

@pytest.mark.parametrize("dtype", [td.float32, td.float64], ids=lambda d: d.name)
def test_uniform_distribution(dtype):
    x = td.random.uniform([200_000], dtype=dtype, seed=11)
    assert x.dtype == dtype and x.shape == (200_000,)
    v = x.numpy()
    assert v.min() >= 0.0 and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 0.005
    assert abs(v.var() - 1 / 12) < 0.002
    counts, _ = np.histogram(v, bins=10, range=(0, 1))
    assert counts.min() > 19_000 and counts.max() < 21_000


@pytest.mark.parametrize("dtype", [td.float32, td.float64], ids=lambda d: d.name)
def test_uniform_range(dtype):
    v = td.random.uniform([50_000], minval=-2.0, maxval=3.0, dtype=dtype, seed=1).numpy()
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.05
    w = td.random.uniform([1000], minval=td.constant(5.0, dtype=dtype), dtype=dtype, seed=2).numpy()
    # maxval defaults to 1: values in [minval, 1) scaled from [0, 1), as TensorFlow computes them
    assert w.max() <= 5.0 and w.min() > 1.0


@pytest.mark.parametrize("dtype", [td.int32, td.int64], ids=lambda d: d.name)
def test_uniform_integers(dtype):
    v = td.random.uniform([60_000], minval=-3, maxval=3, dtype=dtype, seed=8)
    assert v.dtype == dtype
    values, counts = np.unique(v.numpy(), return_counts=True)
    np.testing.assert_array_equal(values, [-3, -2, -1, 0, 1, 2])
    assert counts.min() > 9_400 and counts.max() < 10_600
    big = td.random.uniform([1000], minval=0, maxval=2**31 - 1, dtype=dtype, seed=9).numpy()
    assert big.min() >= 0 and big.max() > 2**30


def test_uniform_int64_full_range():
    info = np.iinfo(np.int64)
    v = td.random.uniform([1000], minval=info.min, maxval=info.max, dtype=td.int64, seed=3).numpy()
    assert (v < 0).any() and (v > 0).any()


@pytest.mark.parametrize("dtype", [td.float32, td.float64], ids=lambda d: d.name)
def test_normal_distribution(dtype):
    v = td.random.normal([200_000], dtype=dtype, seed=5).numpy()
    assert v.dtype == dtype.as_numpy_dtype
    assert abs(v.mean()) < 0.01
    assert abs(v.std() - 1) < 0.01
    assert abs(np.mean(np.abs(v) < 1) - 0.6827) < 0.005
    assert np.isfinite(v).all()
    w = td.random.normal([100_000], mean=3.0, stddev=2.0, dtype=dtype, seed=6).numpy()
    assert abs(w.mean() - 3) < 0.03 and abs(w.std() - 2) < 0.03


def test_shape_forms():
    assert td.random.uniform([]).shape == ()
    assert td.random.uniform(()).shape == ()
    assert td.random.uniform((2, 3)).shape == (2, 3)
    assert td.random.uniform(np.array([4, 1])).shape == (4, 1)
    assert td.random.uniform(td.constant([3, 2], dtype=td.int64)).shape == (3, 2)
    assert td.random.uniform(td.TensorShape([2, 2])).shape == (2, 2)
    assert td.random.normal([0, 5]).shape == (0, 5)
    assert td.random.uniform([0], maxval=4, dtype=td.int32).shape == (0,)


# ---------------------------------------------------------------- seed rules

def _u(seed=None):
    return td.random.uniform([4], seed=seed).numpy()


def test_global_seed_only_differs_per_call_but_replays():
    td.random.set_seed(1234)
    a1, a2 = _u(), _u()
    assert not np.array_equal(a1, a2)
    td.random.set_seed(1234)
    np.testing.assert_array_equal(_u(), a1)
    np.testing.assert_array_equal(_u(), a2)
    td.random.set_seed(4321)
    assert not np.array_equal(_u(), a1)


def test_global_and_op_seed_are_reproducible_per_op():
    td.random.set_seed(1234)
    a1, a2 = _u(seed=1), _u(seed=1)
    assert not np.array_equal(a1, a2)  # each call continues the op's stream
    b1 = _u(seed=2)
    assert not np.array_equal(a1, b1)
    td.random.set_seed(1234)
    np.testing.assert_array_equal(_u(seed=2), b1)  # independent of the calls before it
    np.testing.assert_array_equal(_u(seed=1), a1)
    np.testing.assert_array_equal(_u(seed=1), a2)


def test_op_seed_only_uses_the_default_global_seed():
    a1, a2 = _u(seed=7), _u(seed=7)
    assert not np.array_equal(a1, a2)
    td.random.set_seed(DEFAULT_GRAPH_SEED)
    np.testing.assert_array_equal(_u(seed=7), a1)
    np.testing.assert_array_equal(_u(seed=7), a2)


def test_no_seed_is_random():
    a, b = _u(), _u()
    td.random.set_seed(None)
    c = _u()
    assert not np.array_equal(a, b) and not np.array_equal(a, c) and not np.array_equal(b, c)


def test_ops_have_separate_streams():
    td.random.set_seed(5)
    td.random.uniform([3], seed=1)
    n1 = td.random.normal([3], seed=1).numpy()
    td.random.set_seed(5)
    np.testing.assert_array_equal(td.random.normal([3], seed=1).numpy(), n1)


def test_seed_zero_pairs_are_still_deterministic():
    td.random.set_seed(0)
    a = _u(seed=0)
    td.random.set_seed(0)
    np.testing.assert_array_equal(_u(seed=0), a)


def test_normal_and_int_uniform_follow_the_seed_rules():
    td.random.set_seed(99)
    n = td.random.normal([5]).numpy()
    i = td.random.uniform([5], maxval=100, dtype=td.int64).numpy()
    td.random.set_seed(99)
    np.testing.assert_array_equal(td.random.normal([5]).numpy(), n)
    np.testing.assert_array_equal(td.random.uniform([5], maxval=100, dtype=td.int64).numpy(), i)


# ---------------------------------------------------------------- errors

def test_argument_errors():
    with pytest.raises(ValueError, match="maxval"):
        td.random.uniform([2], dtype=td.int32)
    with pytest.raises(ValueError, match="dtype"):
        td.random.uniform([2], dtype=td.bool)
    with pytest.raises(ValueError, match="dtype"):
        td.random.normal([2], dtype=td.int32)
    with pytest.raises(td.errors.InvalidArgumentError, match="minval < maxval"):
        td.random.uniform([2], minval=5, maxval=5, dtype=td.int32)
    with pytest.raises(td.errors.InvalidArgumentError, match="non-negative"):
        td.random.uniform([2, -1])
    with pytest.raises(td.errors.InvalidArgumentError, match="1-D"):
        td.random.uniform(3)
    with pytest.raises(ValueError, match="fully defined"):
        td.random.uniform([2, None])
    with pytest.raises(TypeError, match="shape"):
        td.random.normal([2.5])
    with pytest.raises(TypeError, match="shape"):
        td.random.normal(td.constant([2.0]))
    with pytest.raises(TypeError, match="seed"):
        td.random.uniform([2], seed=1.5)
    with pytest.raises(TypeError, match="seed"):
        td.random.set_seed("x")
    with pytest.raises(td.errors.InvalidArgumentError, match="scalar"):
        td.random.uniform([2], minval=[0, 1], maxval=5, dtype=td.int32)
    with pytest.raises(td.errors.InvalidArgumentError, match="RandomUniform"):
        td.raw_ops.RandomUniform(shape=[2], dtype=td.int32)


# ---------------------------------------------------------------- shape inference (graph construction)

def test_random_shapes_with_partial_information():
    from ._helpers import infer
    f, i = td.float32, td.int32
    attrs = {"dtype": f}
    assert infer("RandomUniform", [i], [[3]], None, attrs) == ([f], [(None, None, None)])
    assert infer("RandomStandardNormal", [i], [[None]], None, attrs) == ([f], [None])
    assert infer("RandomUniform", [i], [[2]], [td.constant([4, 0])], attrs) == ([f], [(4, 0)])
    assert infer("RandomUniformInt", [i, td.int64, td.int64], [[2], [], []], [td.constant([2, 3]), None, None]) \
        == ([td.int64], [(2, 3)])
    with pytest.raises(ValueError, match=r"non-negative, got \[2, -1\]"):
        infer("RandomUniform", [i], [[2]], [td.constant([2, -1])], attrs)
    with pytest.raises(ValueError, match="1-D"):
        infer("RandomUniform", [i], [[]], None, attrs)
    with pytest.raises(TypeError, match="float32 or float64"):
        infer("RandomStandardNormal", [i], [[1]], None, {"dtype": td.int32})
