"""float16, bfloat16, int8 and uint8: the dtypes, conversions to and from
NumPy, casts, and the ops that take them (computed in float32 / int32 and
rounded once), against NumPy (float16, int8, uint8) and ml_dtypes (bfloat16)."""

import numpy as np
import pytest

import treadle as td
from treadle import _core

try:
    import ml_dtypes
except ImportError:  # bfloat16 tests skip
    ml_dtypes = None

needs_ml_dtypes = pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes is not installed")

NARROW = [td.float16, td.bfloat16, td.int8, td.uint8]
WIDE = [td.float32, td.float64, td.int32, td.int64, td.bool]


def np_type(dtype):
    if dtype == td.bfloat16:
        if ml_dtypes is None:
            pytest.skip("ml_dtypes is not installed")
        return ml_dtypes.bfloat16
    return dtype.as_numpy_dtype


def sample(rng, shape, dtype, low=-4, high=4):
    if dtype == td.bool:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.is_integer:
        lo = max(low, 0) if dtype == td.uint8 else low
        return rng.integers(lo, high, size=shape).astype(np_type(dtype))
    return rng.uniform(low, high, size=shape).astype(np.float32).astype(np_type(dtype))


def rounded(x, dtype):
    """NumPy float32 (or int32) results rounded once to `dtype`."""
    if dtype.is_integer:
        return np.asarray(x).astype(np.int64).astype(np_type(dtype))  # wraps, as C casts do
    return np.asarray(x, dtype=np.float32).astype(np_type(dtype))


# ------------------------------------------------------------------ dtypes

def test_dtype_objects():
    assert td.float16.name == "float16" and td.half is td.float16
    assert td.bfloat16.name == "bfloat16"
    assert (td.float16.as_datatype_enum, td.bfloat16.as_datatype_enum) == (19, 14)  # TensorFlow's numbers
    assert (td.int8.as_datatype_enum, td.uint8.as_datatype_enum) == (9, 10)
    for d in (td.float16, td.bfloat16):
        assert d.is_floating and d.is_numeric and not d.is_integer and d.size == 2
    for d in (td.int8, td.uint8):
        assert d.is_integer and d.is_numeric and not d.is_floating and d.size == 1
    assert td.uint8.is_unsigned and not td.int8.is_unsigned and not td.bool.is_unsigned
    assert (td.int8.min, td.int8.max, td.uint8.min, td.uint8.max) == (-128, 127, 0, 255)
    assert td.float16.max == 65504.0
    assert td.bfloat16.max == float.fromhex("0x1.fep127")
    for d in NARROW:
        assert td.as_dtype(d.name) is d and td.as_dtype(d.as_datatype_enum) is d
    assert td.as_dtype(np.float16) is td.float16
    assert td.as_dtype(np.int8) is td.int8 and td.as_dtype(np.uint8) is td.uint8
    assert td.as_dtype("half") is td.float16
    with pytest.raises(TypeError, match="no DataType has that number"):
        td.as_dtype(11)  # a gap in the numbering
    with pytest.raises(TypeError, match="uint16"):
        td.as_dtype(np.uint16)


@needs_ml_dtypes
def test_bfloat16_numpy_dtype():
    assert td.as_dtype(ml_dtypes.bfloat16) is td.bfloat16
    assert td.bfloat16.as_numpy_dtype is ml_dtypes.bfloat16
    assert td.bfloat16.max == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


# ------------------------------------------------------------------ values

@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_numpy_round_trip_shares_memory(dtype):
    arr = sample(np.random.default_rng(0), (3, 4), dtype)
    t = td.constant(arr)
    assert t.dtype == dtype and t.shape == (3, 4)
    out = t.numpy()
    assert out.dtype == np.dtype(np_type(dtype))
    np.testing.assert_array_equal(out, arr)
    view = np.asarray(t)
    assert view.dtype == out.dtype and view.__array_interface__["data"][0] == t._data_ptr()


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_constant_from_python_values(dtype):
    values = [[1, 2, 3], [4, 5, 6]] if dtype.is_integer else [[0.1, -2.5, 3.0], [1e-5, 70000.0, -0.0]]
    t = td.constant(values, dtype=dtype)
    assert t.dtype == dtype
    want = np.array(values).astype(np_type(dtype))  # rounded once from the Python (double) value
    np.testing.assert_array_equal(t.numpy(), want)
    for i, v in enumerate(values[0]):  # the scalar path rounds the same way
        assert td.constant(v, dtype=dtype).numpy() == want[0][i]


def test_scalars_round_once_from_double():
    # 1 + 2^-11 + 2^-40 is just above a float16 tie: float32 would drop the
    # 2^-40 and round the tie to even (1.0); rounding once gives 1 + 2^-10.
    v = 1 + 2.0**-11 + 2.0**-40
    assert td.constant(v, dtype=td.float16).numpy() == np.float16(v) == 1 + 2.0**-10
    assert td.cast(td.constant(v, dtype=td.float64), td.float16).numpy() == np.float16(v)
    assert (td.constant(np.float16(1), dtype=td.float16) + v).numpy() == np.float16(1) + np.float16(v)


def test_float16_rounding_matches_numpy():
    # Normals, subnormals, ties, overflow, infinities, NaN and signed zero.
    bits = np.arange(0, 1 << 16, dtype=np.uint32) << 16  # every float32 with a zero low half
    f32 = bits.view(np.float32)
    rng = np.random.default_rng(1)
    f32 = np.concatenate([f32, rng.standard_normal(4096).astype(np.float32) * 1e-4,
                          np.float32([65504, 65519.99, 65520, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 1 + 2.0**-11,
                                      1 + 3 * 2.0**-11, -0.0])])
    got = td.cast(td.constant(f32), td.float16).numpy()
    want = f32.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16)[~np.isnan(want)], want.view(np.uint16)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    # And back: every float16 bit pattern widens exactly.
    all16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    back = td.cast(td.constant(all16), td.float32).numpy()
    np.testing.assert_array_equal(back, all16.astype(np.float32))


@needs_ml_dtypes
def test_bfloat16_rounding_matches_ml_dtypes():
    rng = np.random.default_rng(2)
    f32 = np.concatenate([rng.standard_normal(20000).astype(np.float32) * 10.0 ** rng.integers(-40, 38, 20000),
                          np.float32([np.inf, -np.inf, 3.3895314e38, 3.39e38, -0.0, 1e-40, 1 + 2.0**-8])])
    f32 = f32.astype(np.float32)
    got = td.cast(td.constant(f32), td.bfloat16).numpy()
    want = f32.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    nan = td.cast(td.constant(np.float32([np.nan])), td.bfloat16).numpy()
    assert np.isnan(nan.astype(np.float32)).all()


LEVELS = td.config.isa_info()["available"]


@pytest.fixture(params=LEVELS)
def level(request):
    """Each SIMD level the CPU has (the conversions are Highway kernels)."""
    before = td.config.isa_info()["level"]
    td.config.set_isa(request.param)
    yield request.param
    td.config.set_isa(before)


def _float32_samples():
    bits = (np.arange(0, 1 << 16, dtype=np.uint32) << 16) | 0x8001  # every exponent, low bits set
    rng = np.random.default_rng(16)
    edges = np.float32([65504, 65519.99, 65520, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 1 + 2.0**-11, 1 + 3 * 2.0**-11,
                        -0.0, np.inf, -np.inf, 3.3895314e38, 1e-40])
    # An odd length: the tails of every vector width run too.
    return np.concatenate([bits.view(np.float32), rng.standard_normal(4099).astype(np.float32), edges])


def _same_bits_or_both_nan(got, want):
    g = got.astype(np.float32)
    w = want.astype(np.float32)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    keep = ~np.isnan(w)
    np.testing.assert_array_equal(got.view(np.uint16)[keep], want.view(np.uint16)[keep])


def test_float16_conversions_at_every_simd_level(level):
    f32 = _float32_samples()
    with np.errstate(over="ignore"):
        want = f32.astype(np.float16)
    _same_bits_or_both_nan(td.cast(td.constant(f32), td.float16).numpy(), want)
    all16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)[:-3]  # odd length
    back = td.cast(td.constant(all16), td.float32).numpy()
    ok = ~np.isnan(all16)
    np.testing.assert_array_equal(back[ok], all16[ok].astype(np.float32))
    assert np.isnan(back[~ok]).all()


@needs_ml_dtypes
def test_bfloat16_conversions_at_every_simd_level(level):
    f32 = _float32_samples()
    _same_bits_or_both_nan(td.cast(td.constant(f32), td.bfloat16).numpy(), f32.astype(ml_dtypes.bfloat16))
    all16 = np.arange(1 << 16, dtype=np.uint16)[:-3].view(ml_dtypes.bfloat16)
    back = td.cast(td.constant(all16), td.float32).numpy()
    # Widening is exact: the bits move up by 16, NaNs included.
    np.testing.assert_array_equal(back.view(np.uint32), all16.view(np.uint16).astype(np.uint32) << 16)


def test_int8_scalar_range_is_checked():
    with pytest.raises(ValueError, match="out of range"):
        td.constant(200, dtype=td.int8)
    with pytest.raises(ValueError, match="out of range"):
        td.constant(-1, dtype=td.uint8)
    with pytest.raises(TypeError):
        td.constant(1.5, dtype=td.int8)


# ------------------------------------------------------------------ casts

CASTABLE = NARROW + WIDE


@pytest.mark.parametrize("src", CASTABLE, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", CASTABLE, ids=lambda d: d.name)
def test_cast_between_every_pair(src, dst):
    if td.bfloat16 in (src, dst) and ml_dtypes is None:
        pytest.skip("ml_dtypes is not installed")
    rng = np.random.default_rng(3)
    # Values every dtype holds exactly or rounds the same way in both paths.
    x = sample(rng, (2, 7), src, low=0 if dst == td.uint8 else -100, high=100)
    if src.is_floating and dst.is_integer:
        x = np.trunc(x.astype(np.float32)).astype(np_type(src))  # float -> int truncates toward zero
        if dst == td.int8 or dst == td.uint8:
            x = np.clip(x.astype(np.float32), -128 if dst == td.int8 else 0, 127).astype(np_type(src))
    if src.is_integer and dst in (td.int8, td.uint8):
        x = np.clip(x, -128 if dst == td.int8 else 0, 127).astype(np_type(src))
    got = td.cast(td.constant(x), dst)
    assert got.dtype == dst
    if dst == td.bool:
        want = x.astype(np.float32) != 0
    elif src.is_floating and dst.is_floating and dst in (td.float16, td.bfloat16):
        want = x.astype(np.float32).astype(np_type(dst))  # through float32, rounded once
    else:
        want = x.astype(np.float32 if src in (td.float16, td.bfloat16) else x.dtype).astype(np_type(dst))
    np.testing.assert_array_equal(got.numpy(), want)


def test_int_casts_to_8_bits_wrap_like_numpy():
    x = np.array([300, -129, 255, 128, -1, 1000000], dtype=np.int32)
    np.testing.assert_array_equal(td.cast(x, td.int8).numpy(), x.astype(np.int8))
    np.testing.assert_array_equal(td.cast(x, td.uint8).numpy(), x.astype(np.uint8))


def test_float_casts_to_8_bits_saturate():
    x = np.float32([300.7, -300.2, np.nan, 12.9, -12.9])
    np.testing.assert_array_equal(td.cast(x, td.int8).numpy(), [127, -128, 0, 12, -12])
    np.testing.assert_array_equal(td.cast(x, td.uint8).numpy(), [255, 0, 0, 12, 0])


# ------------------------------------------------------------------ arithmetic

FLOAT_NARROW = [td.float16, td.bfloat16]
BINARY = {
    "add": (td.add, np.add), "subtract": (td.subtract, np.subtract), "multiply": (td.multiply, np.multiply),
    "maximum": (td.maximum, np.maximum), "minimum": (td.minimum, np.minimum),
}


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_compute_wide_and_round_once(dtype, name):
    td_fn, np_fn = BINARY[name]
    rng = np.random.default_rng(4)
    a = sample(rng, (3, 4), dtype, low=-100, high=100)
    b = sample(rng, (4,), dtype, low=-100, high=100)  # broadcast
    wide = np.int32 if dtype.is_integer else np.float32
    want = rounded(np_fn(a.astype(wide), b.astype(wide)), dtype)
    got = td_fn(td.constant(a), td.constant(b))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_float16_matches_numpy_float16_arithmetic():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((50,)).astype(np.float16)
    b = rng.standard_normal((50,)).astype(np.float16)
    x, y = td.constant(a), td.constant(b)
    np.testing.assert_array_equal((x + y).numpy(), a + b)
    np.testing.assert_array_equal((x * y).numpy(), a * b)
    np.testing.assert_array_equal((x / y).numpy(), a / b)
    np.testing.assert_array_equal((x - y).numpy(), a - b)


def test_int8_arithmetic_wraps_like_numpy():
    a = np.array([100, -100, 127, -128, 5], dtype=np.int8)
    b = np.array([100, -100, 1, -1, 3], dtype=np.int8)
    x, y = td.constant(a), td.constant(b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal((x + y).numpy(), a + b)
        np.testing.assert_array_equal((x - y).numpy(), a - b)
        np.testing.assert_array_equal((x * y).numpy(), a * b)
    np.testing.assert_array_equal((x // y).numpy(), np.array([1, 1, 127, -128, 1], dtype=np.int8))
    np.testing.assert_array_equal(td.reduce_sum(x).numpy(), np.int8(a.astype(np.int64).sum().astype(np.int8)))
    u = td.constant(np.array([250, 3], dtype=np.uint8))
    np.testing.assert_array_equal((u + td.constant(np.uint8(10))).numpy(), np.array([4, 13], dtype=np.uint8))
    assert (x < y).dtype == td.bool
    np.testing.assert_array_equal((x < y).numpy(), a < b)


UNARY = {
    "relu": (td.nn.relu, lambda x: np.maximum(x, 0)), "tanh": (td.tanh, np.tanh), "exp": (td.exp, np.exp),
    "sigmoid": (td.sigmoid, lambda x: 1 / (1 + np.exp(-x))), "abs": (td.abs, np.abs), "sqrt": (td.sqrt, np.sqrt),
    "negative": (td.negative, np.negative), "square": (td.square, np.square),
}


@pytest.mark.parametrize("dtype", FLOAT_NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float_ops(dtype, name):
    td_fn, np_fn = UNARY[name]
    rng = np.random.default_rng(6)
    x = sample(rng, (64,), dtype, low=0 if name == "sqrt" else -4)
    got = td_fn(td.constant(x))
    assert got.dtype == dtype
    want = rounded(np_fn(x.astype(np.float64)), dtype)  # the exact value rounded once
    # float32's own last-bit error may move a value to the neighbouring 16-bit float.
    tol = 2.0**-10 if dtype == td.float16 else 2.0**-7
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64), rtol=tol, atol=1e-6)


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("reduce", ["reduce_sum", "reduce_max", "reduce_min", "reduce_mean"])
def test_reductions(dtype, reduce):
    rng = np.random.default_rng(7)
    x = sample(rng, (5, 6), dtype, low=-20, high=20)
    wide = np.int32 if dtype.is_integer else np.float32
    np_fn = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_mean": np.mean}[reduce]
    got = getattr(td, reduce)(td.constant(x), axis=1)
    assert got.dtype == dtype
    want = np_fn(x.astype(wide), axis=1)
    if dtype.is_integer and reduce == "reduce_mean":
        want = np.trunc(np_fn(x.astype(np.float64), axis=1))  # integer mean truncates toward zero
    want = rounded(want, dtype)
    tol = 0 if dtype.is_integer else (2.0**-10 if dtype == td.float16 else 2.0**-7)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64), rtol=tol)


def test_empty_extrema_are_the_narrow_types_own():
    # Max and min narrow by saturating: an empty reduction's identity is the 8-bit type's lowest/highest.
    assert td.reduce_max(td.zeros([0], td.int8)).numpy() == -128
    assert td.reduce_min(td.zeros([0], td.int8)).numpy() == 127
    assert td.reduce_max(td.zeros([0], td.uint8)).numpy() == 0
    assert td.reduce_min(td.zeros([0], td.uint8)).numpy() == 255
    assert td.reduce_max(td.zeros([0], td.float16)).numpy() == -np.inf  # as float32's
    data = td.constant([5, -3, 7], dtype=td.int8)
    np.testing.assert_array_equal(td.math.unsorted_segment_max(data, [0, 0, 2], 3).numpy(), [5, -128, 7])
    halves = td.constant([5, -3, 7], dtype=td.float16)
    # An empty segment is the dtype's lowest finite value, as for float32.
    np.testing.assert_array_equal(td.math.unsorted_segment_max(halves, [0, 0, 2], 3).numpy(),
                                  np.float16([5, -65504, 7]))


def test_scans_indexing_and_segments():
    x = np.array([100, 100, -50, 27], dtype=np.int8)
    np.testing.assert_array_equal(td.math.cumsum(td.constant(x)).numpy(), np.cumsum(x, dtype=np.int8))
    h = np.array([0.1, 0.2, 0.3, 1000.0], dtype=np.float16)
    np.testing.assert_array_equal(td.math.cumsum(td.constant(h)).numpy(),
                                  np.cumsum(h.astype(np.float32)).astype(np.float16))
    np.testing.assert_array_equal(td.one_hot([2, 0], 3, dtype=td.float16).numpy(), np.eye(3, dtype=np.float16)[[2, 0]])
    values, indices = td.math.top_k(td.constant(h), k=2)
    np.testing.assert_array_equal(values.numpy(), np.float16([1000.0, 0.3]))
    np.testing.assert_array_equal(indices.numpy(), [3, 2])
    t = td.constant(np.array([[1, 2], [3, 4]], dtype=np.int8))
    np.testing.assert_array_equal(td.gather_nd(t, [[1, 0], [0, 1]]).numpy(), np.int8([3, 2]))
    np.testing.assert_array_equal(td.tensor_scatter_nd_add(t, [[0, 0]], td.constant([127], dtype=td.int8)).numpy(),
                                  np.int8([[-128, 2], [3, 4]]))  # wraps
    np.testing.assert_array_equal(td.math.unsorted_segment_sum(td.constant(h), [1, 1, 0, 0], 2).numpy(),
                                  np.float16([np.float32(h[2]) + np.float32(h[3]), np.float32(h[0]) + np.float32(h[1])]))


@pytest.mark.parametrize("dtype", FLOAT_NARROW, ids=lambda d: d.name)
def test_matmul(dtype):
    rng = np.random.default_rng(8)
    a, b = sample(rng, (7, 5), dtype), sample(rng, (5, 3), dtype)
    got = td.matmul(td.constant(a), td.constant(b))
    assert got.dtype == dtype
    want = rounded(a.astype(np.float32) @ b.astype(np.float32), dtype)
    tol = 2.0**-10 if dtype == td.float16 else 2.0**-7
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.astype(np.float32), rtol=tol, atol=1e-3)


def test_int8_matmul_is_refused_when_checked():
    a = td.constant(np.ones((2, 2), dtype=np.int8))
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="int8 is not in the list.*MatMul"):
        td.matmul(a, a)


def test_softmax_float16():
    x = np.random.default_rng(9).standard_normal((4, 6)).astype(np.float16)
    e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float16)
    got = td.nn.softmax(td.constant(x))
    assert got.dtype == td.float16
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=1e-4)


def test_shape_ops_move_narrow_values_exactly():
    x = np.arange(24, dtype=np.float16).reshape(2, 3, 4) / 7
    t = td.constant(x)
    np.testing.assert_array_equal(td.reshape(t, [6, 4]).numpy(), x.reshape(6, 4))
    np.testing.assert_array_equal(td.transpose(t, [2, 0, 1]).numpy(), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(td.concat([t, t], axis=1).numpy(), np.concatenate([x, x], axis=1))
    np.testing.assert_array_equal(td.gather(t, [1, 0, 1]).numpy(), x[[1, 0, 1]])
    np.testing.assert_array_equal(t[1, :, 2:].numpy(), x[1, :, 2:])
    np.testing.assert_array_equal(td.zeros_like(t).numpy(), np.zeros_like(x))
    np.testing.assert_array_equal(td.stack([t, t]).numpy(), np.stack([x, x]))
    i8 = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    np.testing.assert_array_equal(td.transpose(td.constant(i8)).numpy(), i8.T)


# ------------------------------------------------------------------ functions and gradients

def test_function_on_float16():
    @td.function
    def f(x, w):
        return td.tanh(td.matmul(x, w)) + td.constant(1.0, dtype=td.float16)

    rng = np.random.default_rng(10)
    x, w = sample(rng, (3, 4), td.float16), sample(rng, (4, 2), td.float16)
    got = f(td.constant(x), td.constant(w))
    assert got.dtype == td.float16
    want = np.tanh(x.astype(np.float32) @ w.astype(np.float32)) + 1
    np.testing.assert_allclose(got.numpy().astype(np.float32), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", FLOAT_NARROW, ids=lambda d: d.name)
def test_gradient_in_16_bit_floats(dtype):
    rng = np.random.default_rng(11)
    x = sample(rng, (3, 4), dtype, low=-1, high=1)
    w = sample(rng, (4, 2), dtype, low=-1, high=1)
    xt, wt = td.constant(x), td.Variable(td.constant(w))
    with td.GradientTape() as tape:
        y = td.reduce_sum(td.tanh(td.matmul(xt, wt)) * td.constant(2.0, dtype=dtype))
    g = tape.gradient(y, wt)
    assert g.dtype == dtype
    # The same gradient in float32 (finite differences of it agree: test_op_gradients).
    x32, w32 = td.constant(x.astype(np.float32)), td.Variable(td.constant(w.astype(np.float32)))
    with td.GradientTape() as tape:
        y32 = td.reduce_sum(td.tanh(td.matmul(x32, w32)) * 2.0)
    g32 = tape.gradient(y32, w32).numpy()
    tol = 1e-2 if dtype == td.float16 else 6e-2
    np.testing.assert_allclose(g.numpy().astype(np.float32), g32, rtol=tol, atol=tol)


# ------------------------------------------------------------------ wire formats

@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_tensor_proto_round_trip(dtype):
    x = sample(np.random.default_rng(12), (2, 5), dtype)
    proto = td.make_tensor_proto(x)
    assert proto.dtype == dtype.as_datatype_enum and len(proto.tensor_content) == x.nbytes
    back = td.make_ndarray(proto)
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back, x)


def test_saved_function_keeps_float16_constants(tmp_path):
    c = np.array([0.1, 1000.5, -3.25], dtype=np.float16)

    @td.function
    def f(x):
        return x * td.constant(c)

    x = np.array([1, 2, 3], dtype=np.float16)
    concrete = f.get_concrete_function(td.TensorSpec([3], td.float16))
    td.save(concrete, str(tmp_path / "f.td"))
    loaded = td.load(str(tmp_path / "f.td"))
    np.testing.assert_array_equal(loaded(td.constant(x)).numpy(), x * c)


# ------------------------------------------------------------------ DLPack

@pytest.mark.parametrize("dtype", [td.float16, td.int8, td.uint8], ids=lambda d: d.name)
def test_dlpack_with_numpy_both_ways_without_copies(dtype):
    from treadle.experimental import dlpack
    x = sample(np.random.default_rng(13), (4, 3), dtype)
    t = dlpack.from_dlpack(x)
    assert t.dtype == dtype and t._data_ptr() == x.__array_interface__["data"][0]
    y = np.from_dlpack(t)
    assert y.dtype == x.dtype and y.__array_interface__["data"][0] == t._data_ptr()
    np.testing.assert_array_equal(y, x)


def test_dlpack_bfloat16_round_trip():
    from treadle.experimental import dlpack
    t = td.cast(td.constant([[1.5, -2.25], [3.0, 1e30]]), td.bfloat16)
    u = dlpack.from_dlpack(t)
    assert u.dtype == td.bfloat16 and u._data_ptr() == t._data_ptr()
    np.testing.assert_array_equal(td.cast(u, td.float32).numpy(), td.cast(t, td.float32).numpy())
    capsule = t.__dlpack__()
    v = dlpack.from_dlpack(capsule)
    assert v.dtype == td.bfloat16


# ------------------------------------------------------------------ the op registry

def _call_kinds(op):
    """The narrow dtypes each of `op`'s arguments admits when a call is checked."""
    return {a["name"]: [d for d in NARROW if d in a["allowed"]] for a in op["inputs"]}


def test_no_op_admits_a_narrow_dtype_it_was_not_written_for():
    """Every op either refuses each narrow dtype when a call is checked (its
    allowed lists) or is one of the ops that compute in the wide dtype; the
    ops that take any dtype are control flow, calls, variables and the like,
    which move tensors without reading their elements' type."""
    any_dtype_ops = {"Assert", "AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp", "IdentityN",
                     "If", "StatelessIf", "While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall",
                     "Print", "PyFunc", "TensorListFromTensor", "TensorListSetItem"}
    for op in _core.op_defs():
        for arg in op["inputs"]:
            if not arg["allowed"]:
                assert op["name"] in any_dtype_ops or op["name"].startswith("Loom"), op["name"]


def _sweep_inputs(op, dtype, rng):
    """Inputs for a generic call of `op` with every admitting argument of dtype
    `dtype` (a (3, 4) array) and the others int32 zeros / bools; None when the
    op's arguments are not of that simple kind."""
    inputs, wide_inputs = [], []
    for a in op["inputs"]:
        if a["is_list"]:
            return None
        if dtype in a["allowed"]:
            x = sample(rng, (3, 4), dtype, low=1, high=5)
            inputs.append(td.constant(x))
            wide_inputs.append(td.constant(x.astype(np.int32 if dtype.is_integer else np.float32)))
        elif td.bool in a["allowed"] and len(a["allowed"]) == 1:
            c = td.constant(np.ones((3, 4), dtype=bool))
            inputs.append(c)
            wide_inputs.append(c)
        elif td.int32 in a["allowed"]:
            c = td.constant(np.int32(1))
            inputs.append(c)
            wide_inputs.append(c)
        else:
            return None
    return inputs, wide_inputs


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_registry_sweep_narrow_equals_wide_rounded(dtype):
    """Each op that admits `dtype`, called generically, either refuses the call
    with a Python exception or returns what the same call in the wide dtype
    returns, rounded once; never a crash, never another answer."""
    if dtype == td.bfloat16 and ml_dtypes is None:
        pytest.skip("ml_dtypes is not installed")
    rng = np.random.default_rng(14)
    checked = 0
    for op in _core.op_defs():
        if op["stateful"] or not any(dtype in a["allowed"] for a in op["inputs"]):
            continue
        made = _sweep_inputs(op, dtype, rng)
        if made is None:
            continue
        inputs, wide_inputs = made
        try:
            want = _execute(op["name"], wide_inputs)
        except Exception:
            continue  # the generic call does not fit this op (attrs, shapes)
        got = _execute(op["name"], inputs)
        assert len(got) == len(want), op["name"]
        for g, w in zip(got, want):
            if w.dtype in (td.float32, td.int32) and g.dtype == dtype:
                expect = rounded(w.numpy(), dtype)
            else:
                assert g.dtype == w.dtype, op["name"]
                expect = w.numpy()
            np.testing.assert_array_equal(g.numpy(), expect, err_msg=op["name"])
        checked += 1
    assert checked >= 30


def _execute(name, inputs):
    from treadle.framework.op_execution import execute
    return execute(name, inputs, {})


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.name)
def test_refused_ops_say_so_when_checked(dtype):
    x = td.constant(sample(np.random.default_rng(15), (2, 2), dtype, low=1, high=3))
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match=f"{dtype.name} is not in the list"):
        td.linalg.inv(x)
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match=dtype.name):
        td.linalg.det(x)
