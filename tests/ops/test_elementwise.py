"""Elementwise ops through their public names and the tensor operators,
against NumPy, over several shapes and every supported dtype."""

import operator

import numpy as np
import pytest

import treadle as td
from ._helpers import (FLOAT_DTYPES, INT_DTYPES, NUMERIC_DTYPES, SHAPES, assert_tensor, make_array, seeded_rng)

ALL_DTYPES = NUMERIC_DTYPES + [td.bool, td.string]


def _nonzero(a):
    """`a` with zeros replaced by ones (divisors)."""
    a = a.copy()
    a[a == 0] = 1
    return a


def _floor_div_reference(x, y):
    if np.issubdtype(x.dtype, np.floating):
        return np.floor(x / y)  # TensorFlow's definition for floats
    return np.floor_divide(x, y)


# name -> (public function, operator or None, NumPy reference, dtypes, divisor-like second operand)
BINARY = {
    "add": (td.add, operator.add, np.add, NUMERIC_DTYPES, False),
    "math.add": (td.math.add, None, np.add, NUMERIC_DTYPES, False),
    "subtract": (td.subtract, operator.sub, np.subtract, NUMERIC_DTYPES, False),
    "multiply": (td.multiply, operator.mul, np.multiply, NUMERIC_DTYPES, False),
    "math.realdiv": (td.math.realdiv, None, np.true_divide, FLOAT_DTYPES, True),
    "divide": (td.divide, operator.truediv, np.true_divide, FLOAT_DTYPES, True),
    "floordiv": (td.floordiv, operator.floordiv, _floor_div_reference, NUMERIC_DTYPES, True),
    "math.floordiv": (td.math.floordiv, None, _floor_div_reference, NUMERIC_DTYPES, True),
    "math.floormod": (td.math.floormod, operator.mod, np.mod, NUMERIC_DTYPES, True),
    "mod": (td.mod, None, np.mod, NUMERIC_DTYPES, True),
    "maximum": (td.maximum, None, np.maximum, NUMERIC_DTYPES, False),
    "minimum": (td.minimum, None, np.minimum, NUMERIC_DTYPES, False),
    "equal": (td.equal, operator.eq, np.equal, ALL_DTYPES, False),
    "not_equal": (td.not_equal, operator.ne, np.not_equal, ALL_DTYPES, False),
    "less": (td.less, operator.lt, np.less, NUMERIC_DTYPES, False),
    "less_equal": (td.less_equal, operator.le, np.less_equal, NUMERIC_DTYPES, False),
    "greater": (td.greater, operator.gt, np.greater, NUMERIC_DTYPES, False),
    "greater_equal": (td.greater_equal, operator.ge, np.greater_equal, NUMERIC_DTYPES, False),
    "logical_and": (td.logical_and, operator.and_, np.logical_and, [td.bool], False),
    "logical_or": (td.logical_or, operator.or_, np.logical_or, [td.bool], False),
    "bitwise_and": (td.bitwise.bitwise_and, operator.and_, np.bitwise_and, INT_DTYPES, False),
    "bitwise_or": (td.bitwise.bitwise_or, operator.or_, np.bitwise_or, INT_DTYPES, False),
}

BINARY_CASES = [(name, dt) for name, spec in BINARY.items() for dt in spec[3]]


def _operands(rng, shape, dtype, divisor):
    x = make_array(rng, shape, dtype)
    y = make_array(rng, shape, dtype)
    if divisor and dtype != td.bool:
        y = _nonzero(y)
    if dtype in (td.bool, td.string) and x.size:
        y.flat[0] = x.flat[0]  # equality sees at least one match
    return x, y


@pytest.mark.parametrize("name,dtype", BINARY_CASES, ids=[f"{n}-{d.name}" for n, d in BINARY_CASES])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_binary_matches_numpy(name, dtype, shape):
    fn, op, ref, _, divisor = BINARY[name]
    rng = seeded_rng(name, dtype.name, shape)
    x, y = _operands(rng, shape, dtype, divisor)
    expected = ref(x, y)
    tx, ty = td.constant(x, dtype=dtype), td.constant(y, dtype=dtype)
    out_dtype = td.bool if expected.dtype == np.bool_ else dtype
    assert_tensor(fn(tx, ty), expected, out_dtype)
    if op is not None:
        assert_tensor(op(tx, ty), expected, out_dtype)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_pow_matches_numpy(dtype):
    rng = np.random.default_rng(7)
    for shape in SHAPES:
        if dtype.is_integer:
            x = make_array(rng, shape, dtype, -4, 5)
            y = make_array(rng, shape, dtype, 0, 6)
        else:
            x = make_array(rng, shape, dtype, 0.1, 3)
            y = make_array(rng, shape, dtype, -3, 3)
        expected = np.power(x, y)
        tx, ty = td.constant(x), td.constant(y)
        assert_tensor(td.pow(tx, ty), expected, dtype, rtol=1e-5 if dtype == td.float32 else None)
        assert_tensor(td.math.pow(tx, ty), expected, dtype, rtol=1e-5 if dtype == td.float32 else None)
        assert_tensor(tx ** ty, expected, dtype, rtol=1e-5 if dtype == td.float32 else None)


def test_pow_of_negative_float_base_is_nan_for_fractions():
    out = td.pow(td.constant([-8.0, -2.0, 4.0]), td.constant([1 / 3, 2.0, 0.5]))
    assert np.isnan(out.numpy()[0])
    np.testing.assert_allclose(out.numpy()[1:], [4.0, 2.0])


def test_pow_integer_negative_exponent_is_an_error():
    with pytest.raises(td.errors.InvalidArgumentError, match="negative integer powers"):
        td.pow(td.constant([2, 3]), td.constant([1, -1]))


def test_string_add_concatenates():
    a = td.constant([b"ab", b"", b"x"])
    b = td.constant([b"cd", b"e", b""])
    assert_tensor(td.add(a, b), np.array([b"abcd", b"e", b"x"], dtype=object), td.string)
    assert_tensor(a + b, np.array([b"abcd", b"e", b"x"], dtype=object), td.string)
    assert_tensor(a + "!", np.array([b"ab!", b"!", b"x!"], dtype=object), td.string)
    assert_tensor("<" + a, np.array([b"<ab", b"<", b"<x"], dtype=object), td.string)
    # broadcasting applies to strings too
    m = td.constant([[b"a"], [b"b"]]) + td.constant([b"1", b"2"])
    assert_tensor(m, np.array([[b"a1", b"a2"], [b"b1", b"b2"]], dtype=object), td.string)


def test_string_equality():
    a = td.constant(["x", "yy", "z"])
    assert_tensor(a == "yy", [False, True, False], td.bool)
    assert_tensor(a != "yy", [True, False, True], td.bool)
    assert_tensor(td.equal(a, td.constant(["x", "y", "z"])), [True, False, True], td.bool)
    assert_tensor(td.not_equal(a, td.constant(["x", "y", "z"])), [False, True, False], td.bool)


# ---------------------------------------------------------------- unary

def _sigmoid(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


def _relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


# name -> (public function, operator or None, NumPy reference, dtypes, domain (low, high))
UNARY = {
    "negative": (td.negative, operator.neg, np.negative, NUMERIC_DTYPES, None),
    "math.negative": (td.math.negative, None, np.negative, NUMERIC_DTYPES, None),
    "abs": (td.abs, abs, np.abs, NUMERIC_DTYPES, None),
    "square": (td.square, None, np.square, NUMERIC_DTYPES, None),
    "sign": (td.sign, None, np.sign, NUMERIC_DTYPES, None),
    "sqrt": (td.sqrt, None, np.sqrt, FLOAT_DTYPES, (0, 10)),
    "math.rsqrt": (td.math.rsqrt, None, lambda x: 1 / np.sqrt(x), FLOAT_DTYPES, (0.01, 10)),
    "exp": (td.exp, None, np.exp, FLOAT_DTYPES, None),
    "log": (td.log, None, np.log, FLOAT_DTYPES, (0.01, 10)),
    "tanh": (td.tanh, None, np.tanh, FLOAT_DTYPES, None),
    "math.tanh": (td.math.tanh, None, np.tanh, FLOAT_DTYPES, None),
    "nn.tanh": (td.nn.tanh, None, np.tanh, FLOAT_DTYPES, None),
    "sigmoid": (td.sigmoid, None, _sigmoid, FLOAT_DTYPES, None),
    "nn.sigmoid": (td.nn.sigmoid, None, _sigmoid, FLOAT_DTYPES, None),
    "nn.relu": (td.nn.relu, None, _relu, NUMERIC_DTYPES, None),
    "math.reciprocal": (td.math.reciprocal, None, np.reciprocal, FLOAT_DTYPES, (0.1, 5)),
    "logical_not": (td.logical_not, operator.invert, np.logical_not, [td.bool], None),
    "bitwise.invert": (td.bitwise.invert, operator.invert, np.invert, INT_DTYPES, None),
}

UNARY_CASES = [(name, dt) for name, spec in UNARY.items() for dt in spec[3]]


@pytest.mark.parametrize("name,dtype", UNARY_CASES, ids=[f"{n}-{d.name}" for n, d in UNARY_CASES])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary_matches_numpy(name, dtype, shape):
    fn, op, ref, _, domain = UNARY[name]
    rng = seeded_rng(name, dtype.name, shape)
    x = make_array(rng, shape, dtype, *(domain or (-5, 5)))
    expected = np.asarray(ref(x)).astype(x.dtype)
    tx = td.constant(x)
    assert_tensor(fn(tx), expected, dtype)
    if op is not None:
        assert_tensor(op(tx), expected, dtype)


def test_unary_special_float_values():
    x = td.constant([np.nan, -0.0, np.inf, -np.inf, 2.0])
    assert np.isnan(td.sign(x).numpy()[0])
    np.testing.assert_array_equal(td.sign(x).numpy()[1:], [0.0, 1.0, -1.0, 1.0])
    assert not np.signbit(td.abs(x).numpy()[1])  # abs(-0.0) is +0.0
    assert np.signbit((-td.constant([0.0])).numpy()[0])  # -(+0.0) is -0.0
    np.testing.assert_array_equal(td.sqrt(td.constant([-1.0, 4.0])).numpy(), [np.nan, 2.0])
    np.testing.assert_array_equal(td.log(td.constant([0.0, 1.0])).numpy(), [-np.inf, 0.0])
    np.testing.assert_array_equal(td.sigmoid(td.constant([-1000.0, 1000.0])).numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(td.exp(td.constant([1000.0, -1000.0])).numpy(), [np.inf, 0.0])
    assert np.isnan(td.nn.relu(td.constant([np.nan])).numpy()[0])
    out = td.maximum(td.constant([np.nan, 1.0]), td.constant([1.0, np.nan])).numpy()
    assert np.isnan(out).all()


# ---------------------------------------------------------------- broadcasting

BROADCAST_SHAPES = [
    ((3, 4), (4,)),            # rank-expanding
    ((4,), (3, 4)),
    ((3, 1), (1, 4)),          # both sides broadcast
    ((2, 3, 4), (3, 1)),
    ((2, 1, 4), (3, 1)),
    ((5, 1, 1), (1, 1, 6)),
    ((), (2, 3)),              # scalar against a matrix
    ((2, 3), ()),
    ((1,), (2, 3)),
    ((0, 3), (1, 3)),          # empty result
    ((2, 1, 3, 1), (4, 1, 5)),
]


@pytest.mark.parametrize("xs,ys", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_broadcasting_matches_numpy(xs, ys, dtype):
    rng = np.random.default_rng(3)
    x = make_array(rng, xs, dtype)
    y = _nonzero(make_array(rng, ys, dtype))
    tx, ty = td.constant(x), td.constant(y)
    assert_tensor(tx + ty, x + y, dtype)
    assert_tensor(tx - ty, x - y, dtype)
    assert_tensor(ty * tx, y * x, dtype)
    assert_tensor(td.maximum(tx, ty), np.maximum(x, y), dtype)
    assert_tensor(tx < ty, x < y, td.bool)
    assert_tensor(tx == ty, x == y, td.bool)
    assert_tensor(tx % ty, np.mod(x, y), dtype)


def test_broadcast_bool_and_string():
    a = td.constant([[True], [False]])
    b = td.constant([True, False, True])
    assert_tensor(a & b, np.array([[True], [False]]) & np.array([True, False, True]), td.bool)
    assert_tensor(a | b, np.array([[True], [False]]) | np.array([True, False, True]), td.bool)
    s = td.constant([["a"], ["b"]]) == td.constant(["a", "b", "a"])
    assert_tensor(s, [[True, False, True], [False, True, False]], td.bool)


@pytest.mark.parametrize("xs,ys", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 3, 4), (2, 4))], ids=str)
def test_incompatible_broadcast_is_an_error(xs, ys):
    with pytest.raises(td.errors.InvalidArgumentError, match="Incompatible shapes"):
        td.constant(np.zeros(xs, np.float32)) + td.constant(np.zeros(ys, np.float32))
    with pytest.raises(td.errors.InvalidArgumentError, match="Incompatible shapes"):
        td.equal(td.constant(np.zeros(xs, np.int32)), td.constant(np.zeros(ys, np.int32)))


# ---------------------------------------------------------------- TensorFlow's dtype rules

@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_python_int_takes_the_tensor_dtype(dtype):
    t = td.constant([1, 2, 3], dtype=dtype)
    for result in (t + 1, 1 + t, t * 2, 2 - t, t // 2, t % 2, t ** 2, td.add(t, 1), td.maximum(t, 2)):
        assert result.dtype == dtype
    np.testing.assert_array_equal((t + 1).numpy(), [2, 3, 4])
    np.testing.assert_array_equal((10 - t).numpy(), [9, 8, 7])
    assert (t < 2).dtype == td.bool


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_python_float_takes_the_tensor_dtype(dtype):
    t = td.constant([1.0, 2.0], dtype=dtype)
    assert (t * 1.5).dtype == dtype
    assert (1.5 / t).dtype == dtype
    np.testing.assert_allclose((t * 1.5).numpy(), [1.5, 3.0])


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
def test_true_division_of_integers_gives_float64(dtype):
    x = td.constant([7, -7, 1, 0], dtype=dtype)
    y = td.constant([2, 2, 0, 0], dtype=dtype)
    out = x / y
    assert out.dtype == td.float64
    np.testing.assert_array_equal(out.numpy(), [3.5, -3.5, np.inf, np.nan])
    assert td.divide(x, 2).dtype == td.float64
    assert td.math.truediv(x, 2).dtype == td.float64


def test_true_division_of_floats_keeps_the_dtype():
    assert (td.constant([1.0]) / 2).dtype == td.float32
    assert (td.constant([1.0], dtype=td.float64) / 2).dtype == td.float64


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_floor_division_and_modulo_follow_python(dtype):
    xs = [-7, 7, -7, 7, 0, -1, 6]
    ys = [2, -2, -2, 2, 3, 3, -3]
    x, y = td.constant(xs, dtype=dtype), td.constant(ys, dtype=dtype)
    np.testing.assert_array_equal((x // y).numpy(), [a // b for a, b in zip(xs, ys)])
    np.testing.assert_array_equal((x % y).numpy(), [a % b for a, b in zip(xs, ys)])
    np.testing.assert_array_equal(td.math.floordiv(x, y).numpy(), [a // b for a, b in zip(xs, ys)])
    np.testing.assert_array_equal(td.math.floormod(x, y).numpy(), [a % b for a, b in zip(xs, ys)])


def test_float_modulo_follows_python():
    xs = [-7.5, 7.5, -7.5, 7.5, 1e-3]
    ys = [2.0, -2.0, -2.0, 2.0, -5.0]
    out = td.constant(xs, dtype=td.float64) % td.constant(ys, dtype=td.float64)
    np.testing.assert_allclose(out.numpy(), [a % b for a, b in zip(xs, ys)])


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
def test_integer_arithmetic_wraps_around(dtype):
    info = np.iinfo(dtype.as_numpy_dtype)
    big = td.constant([info.max], dtype=dtype)
    low = td.constant([info.min], dtype=dtype)
    np.testing.assert_array_equal((big + 1).numpy(), [info.min])
    np.testing.assert_array_equal((low - 1).numpy(), [info.max])
    np.testing.assert_array_equal((big * 2).numpy(), [-2])
    np.testing.assert_array_equal((-low).numpy(), [info.min])
    np.testing.assert_array_equal(td.abs(low).numpy(), [info.min])
    # lowest // -1 overflows: it wraps (no crash), and lowest % -1 is 0.
    np.testing.assert_array_equal((low // -1).numpy(), [info.min])
    np.testing.assert_array_equal((low % -1).numpy(), [0])
    np.testing.assert_array_equal(td.square(big).numpy(), np.square(np.array([info.max], dtype.as_numpy_dtype)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_float_division_by_zero_is_inf_or_nan(dtype):
    x = td.constant([1.0, -1.0, 0.0], dtype=dtype)
    np.testing.assert_array_equal((x / 0.0).numpy(), [np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal((x // 0.0).numpy(), [np.inf, -np.inf, np.nan])
    assert np.isnan((x % 0.0).numpy()).all()


def test_bool_operators():
    a = td.constant([True, True, False, False])
    b = td.constant([True, False, True, False])
    assert_tensor(a & b, [True, False, False, False], td.bool)
    assert_tensor(a | b, [True, True, True, False], td.bool)
    assert_tensor(~a, [False, False, True, True], td.bool)
    assert_tensor(a == b, [True, False, False, True], td.bool)
    assert_tensor(a != b, [False, True, True, False], td.bool)
    assert_tensor(a & True, [True, True, False, False], td.bool)


def test_integer_bitwise_operators():
    x = td.constant([12, -1, 0], dtype=td.int64)
    y = td.constant([10, 5, 7], dtype=td.int64)
    assert_tensor(x & y, np.array([12 & 10, -1 & 5, 0], np.int64))
    assert_tensor(x | y, np.array([12 | 10, -1 | 5, 7], np.int64))
    assert_tensor(~x, np.array([~12, 0, -1], np.int64))


def test_comparisons_of_python_values():
    t = td.constant([1, 5, 3])
    assert_tensor(t > 2, [False, True, True], td.bool)
    assert_tensor(t <= 3, [True, False, True], td.bool)
    assert_tensor(2 < t, [False, True, True], td.bool)  # reflected
    assert_tensor(t == 5, [False, True, False], td.bool)


# ---------------------------------------------------------------- Cast

CAST_DTYPES = NUMERIC_DTYPES + [td.bool]


@pytest.mark.parametrize("src", CAST_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", CAST_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (7,), (2, 3), (0, 2)], ids=str)
def test_cast_matches_numpy(src, dst, shape):
    rng = np.random.default_rng(11)
    x = make_array(rng, shape, src, -100, 100)
    if src.is_floating and x.size:
        x.flat[0] = -2.75  # truncation toward zero
    out = td.cast(td.constant(x), dst)
    expected = x.astype(dst.as_numpy_dtype)
    assert_tensor(out, expected, dst)
    assert_tensor(td.math.cast(td.constant(x), dst), expected, dst)


def test_cast_float_to_int_truncates_toward_zero():
    out = td.cast(td.constant([1.9, -1.9, 0.5, -0.5]), td.int32)
    np.testing.assert_array_equal(out.numpy(), [1, -1, 0, 0])


def test_cast_to_the_same_dtype_returns_the_tensor():
    t = td.constant([1, 2])
    assert td.cast(t, td.int32) is t


def test_cast_to_or_from_string_is_an_error():
    with pytest.raises((td.errors.InvalidArgumentError, TypeError), match="Cast"):
        td.cast(td.constant(["1"]), td.int32)
    with pytest.raises((td.errors.InvalidArgumentError, TypeError), match="string"):
        td.cast(td.constant([1]), td.string)


def test_cast_accepts_dtype_names_and_numpy_dtypes():
    assert td.cast(td.constant([1]), "float64").dtype == td.float64
    assert td.cast(td.constant([1]), np.int64).dtype == td.int64


def test_fast_float32_transcendentals_sweep():
    """The vectorized float32 exp/tanh/sigmoid against float64 NumPy over the
    whole float range, including overflow, underflow, signed zeros and NaN."""
    v = np.concatenate([np.linspace(-110, 110, 44001), np.logspace(-30, 2, 2000), -np.logspace(-30, 2, 2000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    t = td.constant(v)
    wide = v.astype(np.float64)
    with np.errstate(over="ignore"):
        references = {
            "exp": (td.exp, np.exp(wide)),
            "tanh": (td.tanh, np.tanh(wide)),
            "sigmoid": (td.sigmoid, 1.0 / (1.0 + np.exp(-wide))),
        }
        for name, (fn, expected) in references.items():
            got = fn(t).numpy().astype(np.float64)
            expected32 = expected.astype(np.float32).astype(np.float64)
            assert np.isnan(got[-1]), name
            assert np.array_equal(np.isinf(got), np.isinf(expected32)), name
            normal = np.isfinite(expected32) & (np.abs(expected32) > 1.2e-38)
            rel = np.abs(got[normal] - expected32[normal]) / np.abs(expected32[normal])
            assert rel.max() < 1e-6, (name, rel.max())
