"""treadle's SIMD kernels (src/cpp/ops/kernels/simd/) at every level this CPU
offers, against NumPy.

Bounds, stated once here: exp, log, tanh and sigmoid are within MAX_ULP units
in the last place of NumPy's result computed in float64 and rounded (float32),
or of NumPy's float64 result (float64); special values (+-0, +-inf, NaN,
subnormals, the overflow and saturation ranges) come out exactly as NumPy's.
Arithmetic, max/min and the casts are exact; the activation gradients
within two roundings of NumPy's.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import treadle as td

MAX_ULP = 4
LEVELS = td.config.isa_info()["available"]


@pytest.fixture(params=LEVELS)
def level(request):
    td.config.set_isa(request.param)
    assert td.config.isa_info()["level"] == request.param
    yield request.param
    # Back to the cap the session started with (none: the best level).
    td.config.set_isa(os.environ.get("TREADLE_ISA") or td.config.isa_info()["known"][0])


def ordered_bits(a):
    """Float bit patterns mapped to integers that are ordered like the floats,
    so that the difference of two is their distance in ulps."""
    bits = a.view(np.int32 if a.dtype == np.float32 else np.int64).astype(np.int64)
    magnitude = bits & (0x7FFFFFFF if a.dtype == np.float32 else 0x7FFFFFFFFFFFFFFF)
    return np.where(bits < 0, -magnitude, magnitude)


def ulps(got, want):
    distance = np.abs(ordered_bits(got) - ordered_bits(want))
    distance[np.isnan(got) & np.isnan(want)] = 0
    return distance


def sigmoid64(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


REFERENCES = {
    "exp": (td.exp, np.exp),
    "log": (td.math.log, np.log),
    "tanh": (td.tanh, np.tanh),
    "sigmoid": (td.sigmoid, sigmoid64),
}

SPECIAL32 = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -1e-40, 1.1754944e-38, 3.4028235e38, -3.4028235e38,
     88.72283, 88.72284, 89.0, -87.3, -103.0, -103.9, -104.0, -105.0, 9.0, -9.0, 15.0, -15.0, 20.0, -20.0,
     0.625, -0.625, 1e-3, -1e-3, 1.0, -1.0],
    np.float32,
)


def random_inputs(dtype, n=60_000, seed=0):
    """Every magnitude (random bit patterns), dense samples over the ranges
    where the functions bend, saturate and overflow, and odd lengths, so that
    every vector width sees a tail."""
    rs = np.random.RandomState(seed)
    if dtype == np.float32:
        patterns = rs.randint(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
        ranges = rs.uniform(-110, 95, n).astype(np.float32)
    else:
        patterns = rs.randint(0, 2**63, size=n, dtype=np.uint64).view(np.float64)
        patterns = patterns * np.where(rs.rand(n) < 0.5, -1, 1)
        ranges = rs.uniform(-750, 715, n)
    x = np.concatenate([patterns, ranges, rs.randn(n) * 3]).astype(dtype)
    return x[: len(x) - 3]  # not a multiple of any vector width


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_math_within_ulp_bound(level, name, dtype):
    ours, numpy_fn = REFERENCES[name]
    x = np.concatenate([random_inputs(dtype), SPECIAL32.astype(dtype)])
    if name == "log":
        x = np.abs(x)
    with np.errstate(all="ignore"):
        want = numpy_fn(x.astype(np.float64)).astype(dtype)
    got = ours(td.constant(x)).numpy()
    assert got.dtype == dtype
    distance = ulps(got, want)
    worst = int(np.argmax(distance))
    assert distance[worst] <= MAX_ULP, (
        f"{name} at {level}: {x[worst]!r} -> {got[worst]!r}, NumPy {want[worst]!r} ({distance[worst]} ulp)")


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_special_values_exact(level, name):
    ours, numpy_fn = REFERENCES[name]
    x = SPECIAL32 if name != "log" else np.concatenate([SPECIAL32, -SPECIAL32])
    with np.errstate(all="ignore"):
        want = numpy_fn(x.astype(np.float64)).astype(np.float32)
    got = ours(td.constant(x)).numpy()
    exact = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1) | (np.abs(want) < 1.1754944e-38)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[exact], want[exact])
    # The sign of zero survives where the function keeps it (exp and sigmoid never give -0).
    if name == "tanh":
        assert np.signbit(got[1]) and not np.signbit(got[0])


def test_saturation_ranges(level):
    big = np.array([89, 100, 1e4, 2e38], np.float32)
    np.testing.assert_array_equal(td.exp(td.constant(big)).numpy(), np.inf)
    np.testing.assert_array_equal(td.exp(td.constant(-big * 1.2)).numpy(), 0.0)
    np.testing.assert_array_equal(td.tanh(td.constant(big)).numpy(), 1.0)
    np.testing.assert_array_equal(td.tanh(td.constant(-big)).numpy(), -1.0)
    np.testing.assert_array_equal(td.sigmoid(td.constant(big)).numpy(), 1.0)
    np.testing.assert_array_equal(td.sigmoid(td.constant(-big * 1.2)).numpy(), 0.0)
    # Subnormal results of exp and sigmoid are kept, not flushed to zero.
    tiny = np.array([-100.0, -102.0], np.float32)
    assert np.all(td.exp(td.constant(tiny)).numpy() > 0)
    assert np.all(td.sigmoid(td.constant(tiny)).numpy() > 0)


BINARY = {
    "add": (td.add, np.add),
    "subtract": (td.subtract, np.subtract),
    "multiply": (td.multiply, np.multiply),
    "divide": (td.math.realdiv, np.divide),
    "maximum": (td.maximum, np.maximum),
    "minimum": (td.minimum, np.minimum),
}
SHAPES = [((37,), (37,)), ((37,), ()), ((), (37,)), ((3, 5, 7), (5, 1)), ((7,), (3, 5, 7)), ((4, 1), (1, 9)),
          ((2, 1, 13), (2, 3, 1))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_arithmetic_exact(level, name, dtype, shapes):
    ours, numpy_fn = BINARY[name]
    rs = np.random.RandomState(3)
    a = np.asarray(rs.randn(*shapes[0]), dtype)
    b = np.asarray(rs.randn(*shapes[1]), dtype)
    if a.size > 2:
        a.flat[1], a.flat[2] = np.nan, np.inf
    if b.size > 3:
        b.flat[3] = np.nan
    with np.errstate(all="ignore"):
        want = numpy_fn(a, b)
    got = ours(td.constant(a), td.constant(b)).numpy()
    np.testing.assert_array_equal(got, want)  # NaN matches NaN: max/min propagate it, as NumPy does


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_gradients_exact(level, dtype):
    rs = np.random.RandomState(4)
    y = rs.rand(1001).astype(dtype)
    dy = rs.randn(1001).astype(dtype)
    # The compiler may fuse a multiply and a subtraction (FMA), which rounds
    # once where NumPy rounds twice: the results agree to 2 roundings of the
    # factor in [0, 1] times dy.
    tolerance = 2 * np.finfo(dtype).eps * np.abs(dy)
    got = td.raw_ops.SigmoidGrad(y=td.constant(y), dy=td.constant(dy)).numpy()
    assert np.all(np.abs(got - dy * (y * (1 - y))) <= tolerance)
    got = td.raw_ops.TanhGrad(y=td.constant(y), dy=td.constant(dy)).numpy()
    assert np.all(np.abs(got - dy * (1 - y * y)) <= tolerance)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows(level, log):
    rs = np.random.RandomState(5)
    x = (rs.randn(19, 133) * 10).astype(np.float32)
    x[3] = -np.inf
    x[3, 7] = 2.0  # one finite logit in a row of -inf
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        want = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    if not log:
        want = np.exp(want)
    fn = td.nn.log_softmax if log else td.nn.softmax
    got = fn(td.constant(x)).numpy()
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(got[~finite], want[~finite])


@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2)])
def test_reductions(level, axis):
    rs = np.random.RandomState(6)
    x = rs.randn(5, 37, 11).astype(np.float32)
    t = td.constant(x)
    # Sums over rows add up to 8 rows in float before going into double: an
    # error of a few roundings of the magnitudes summed, as in NumPy's sums.
    magnitude = np.abs(x.astype(np.float64)).sum(axis=axis)
    count = x.size // np.size(magnitude)
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(td.reduce_sum(t, axis=axis).numpy(), x.astype(np.float64).sum(axis=axis),
                               rtol=1e-6, atol=8 * eps * np.max(magnitude))
    np.testing.assert_allclose(td.reduce_mean(t, axis=axis).numpy(), x.astype(np.float64).mean(axis=axis),
                               rtol=1e-6, atol=8 * eps * np.max(magnitude) / count)
    np.testing.assert_array_equal(td.reduce_max(t, axis=axis).numpy(), x.max(axis=axis))
    np.testing.assert_array_equal(td.reduce_min(t, axis=axis).numpy(), x.min(axis=axis))
    x[2, 5, 3] = np.nan
    np.testing.assert_array_equal(td.reduce_max(td.constant(x), axis=axis).numpy(), x.max(axis=axis))
    np.testing.assert_array_equal(td.reduce_min(td.constant(x), axis=axis).numpy(), x.min(axis=axis))


def test_sum_accumulates_in_double(level):
    # 2**24 + many ones: a float32 accumulator would stop at 2**24.
    x = np.ones(100_003, np.float32)
    x[0] = 2.0**24
    assert td.reduce_sum(td.constant(x)).numpy() == np.float32(2.0**24 + 100_002)


def test_casts(level):
    f = np.array([0.0, -0.0, 1.9, -1.9, 2.5e9, -2.5e9, 2147483648.0, -2147483648.0, np.nan, np.inf, -np.inf,
                  1e-40, 123456.7] * 3, np.float32)
    f64 = np.nan_to_num(f.astype(np.float64), nan=0.0)
    want = np.clip(np.trunc(f64), -2**31, 2**31 - 1).astype(np.int32)
    np.testing.assert_array_equal(td.cast(td.constant(f), td.int32).numpy(), want)
    np.testing.assert_array_equal(td.cast(td.constant(f), td.float64).numpy(), f.astype(np.float64))
    np.testing.assert_array_equal(td.cast(td.constant(f), td.bool).numpy(), f != 0)
    d = np.array([1e300, -1e300, 1.0000000001, np.nan, 3e-46] * 5)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(td.cast(td.constant(d), td.float32).numpy(), d.astype(np.float32))
    i = np.array([0, 1, -1, 2**31 - 1, -2**31, 16777217] * 5, np.int32)
    np.testing.assert_array_equal(td.cast(td.constant(i), td.float32).numpy(), i.astype(np.float32))
    b = np.array([True, False, True] * 11)
    np.testing.assert_array_equal(td.cast(td.constant(b), td.float32).numpy(), b.astype(np.float32))


def test_levels_are_reported():
    info = td.config.isa_info()
    assert info["available"][-1] == "scalar"
    assert set(info["available"]) <= set(info["known"])
    assert info["level"] in info["available"]


def test_unknown_level_is_refused():
    with pytest.raises(td.errors.InvalidArgumentError, match="unknown SIMD level 'avx3'.*scalar"):
        td.config.set_isa("avx3")


def _import_with(env_value):
    env = dict(os.environ, TREADLE_ISA=env_value)
    code = "import treadle as td; print(td.config.isa_info()['level'])"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_environment_variable_caps_the_level():
    done = _import_with("scalar")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "scalar"
    best = LEVELS[0]
    done = _import_with(td.config.isa_info()["known"][0])  # a cap above the CPU leaves its best level
    assert done.stdout.strip() == best


def test_environment_variable_with_a_bad_value_fails_the_import():
    done = _import_with("avx-2")
    assert done.returncode != 0
    assert "unknown SIMD level 'avx-2'" in done.stderr
