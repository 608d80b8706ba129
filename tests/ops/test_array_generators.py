"""Tensors made from a shape and a value: fill, zeros, ones, zeros_like,
ones_like, range."""

import numpy as np
import pytest

import treadle as td
try:  # tests/ops as a package, or as a plain directory on sys.path
    from .array_testing import ALL_DTYPES, NUMERIC_DTYPES, check, sample
except ImportError:
    from array_testing import ALL_DTYPES, NUMERIC_DTYPES, check, sample

SHAPES = [[], [0], [3], [2, 3], [2, 0, 4], [1, 1, 1]]


# ---------------------------------------------------------------- fill


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_fill_matches_numpy(dtype, shape):
    value = sample((), dtype, seed=4)
    out = td.fill(shape, td.constant(value))
    check(out, np.full(shape, value, dtype=value.dtype), dtype)


def test_fill_python_values_and_dims_forms():
    check(td.fill([2], 1.5), np.array([1.5, 1.5], np.float32), td.float32)
    check(td.fill((2, 1), 7), np.full((2, 1), 7, np.int32), td.int32)
    check(td.fill(td.constant([3], td.int64), "ab"), np.array([b"ab"] * 3, dtype=object), td.string)
    check(td.fill(td.TensorShape([1, 2]), True), np.ones((1, 2), bool), td.bool)


def test_fill_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match=r"dims\[1\] = -2 must be non-negative"):
        td.fill([2, -2], 1.0)
    with pytest.raises(td.errors.InvalidArgumentError, match="'dims' must be a vector"):
        td.fill([[2]], 1.0)
    with pytest.raises(td.errors.InvalidArgumentError, match="'value' must be a scalar"):
        td.fill([2], [1.0, 2.0])
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="dims"):
        td.fill([2.5], 1.0)


# ---------------------------------------------------------------- zeros, ones


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_zeros_of_every_dtype(dtype, shape):
    expected = np.full(shape, b"", dtype=object) if dtype == td.string else np.zeros(shape, dtype.as_numpy_dtype)
    check(td.zeros(shape, dtype), expected, dtype)


@pytest.mark.parametrize("dtype", [td.float32, td.float64, td.int32, td.int64, td.bool])
@pytest.mark.parametrize("shape", SHAPES)
def test_ones_of_every_dtype(dtype, shape):
    check(td.ones(shape, dtype=dtype), np.ones(shape, dtype.as_numpy_dtype), dtype)


def test_zeros_and_ones_defaults_and_shape_forms():
    check(td.zeros([2]), np.zeros(2, np.float32), td.float32)
    check(td.ones(3), np.ones(3, np.float32), td.float32)
    check(td.zeros(td.constant([2, 2])), np.zeros((2, 2), np.float32))
    check(td.ones(td.constant(2)), np.ones(2, np.float32))
    check(td.zeros(td.TensorShape([1, 3]), "int64"), np.zeros((1, 3), np.int64), td.int64)
    check(td.ones((2, 1), np.float64), np.ones((2, 1)), td.float64)


def test_zeros_and_ones_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match=r"dims\[0\] = -1 must be non-negative"):
        td.zeros([-1, 2])
    with pytest.raises(TypeError, match="string"):
        td.ones([2], td.string)
    with pytest.raises(ValueError, match="partially known TensorShape"):
        td.zeros(td.TensorShape([None, 2]))


# ---------------------------------------------------------------- zeros_like, ones_like


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0, 2), (2, 3)])
def test_zeros_like(dtype, shape):
    x = td.constant(sample(shape, dtype))
    expected = np.full(shape, b"", dtype=object) if dtype == td.string else np.zeros(shape, dtype.as_numpy_dtype)
    check(td.zeros_like(x), expected, dtype)


@pytest.mark.parametrize("dtype", [td.float32, td.float64, td.int32, td.int64, td.bool])
@pytest.mark.parametrize("shape", [(), (0, 2), (2, 3)])
def test_ones_like(dtype, shape):
    x = td.constant(sample(shape, dtype))
    check(td.ones_like(x), np.ones(shape, dtype.as_numpy_dtype), dtype)


def test_like_with_another_dtype_and_python_input():
    x = td.constant([[1, 2, 3]])
    check(td.zeros_like(x, dtype=td.float64), np.zeros((1, 3)), td.float64)
    check(td.ones_like(x, dtype=td.bool), np.ones((1, 3), bool), td.bool)
    check(td.ones_like(x, dtype=td.int32), np.ones((1, 3), np.int32), td.int32)
    check(td.zeros_like([1.0, 2.0]), np.zeros(2, np.float32), td.float32)
    check(td.zeros_like(td.constant(["a"]), dtype=td.int64), np.zeros(1, np.int64), td.int64)


def test_ones_like_of_strings_is_an_error():
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="string"):
        td.ones_like(td.constant(["a", "b"]))


# ---------------------------------------------------------------- range


@pytest.mark.parametrize("args,expected_dtype", [
    ((5,), td.int32),
    ((2, 9), td.int32),
    ((2, 9, 3), td.int32),
    ((9, 2, -2), td.int32),
    ((0,), td.int32),
    ((3, 3), td.int32),
    ((-4, -20, -5), td.int32),
    ((1.5,), td.float32),
    ((0, 1, 0.1), td.float32),
    ((2, 0.5, -0.25), td.float32),
])
def test_range_matches_numpy(args, expected_dtype):
    out = td.range(*args)
    expected = np.arange(*args)
    assert out.dtype == expected_dtype
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(out.numpy(), expected.astype(expected_dtype.as_numpy_dtype), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_range_with_dtype(dtype):
    check(td.range(1, 7, 2, dtype=dtype), np.arange(1, 7, 2).astype(dtype.as_numpy_dtype), dtype)
    check(td.range(4, dtype=dtype), np.arange(4).astype(dtype.as_numpy_dtype), dtype)


def test_range_dtype_inference_from_tensors():
    check(td.range(td.constant(5, td.int64)), np.arange(5, dtype=np.int64), td.int64)
    check(td.range(td.constant(1, td.int64), 4.0), np.arange(1, 4, dtype=np.float32), td.float32)
    check(td.range(td.constant(3.0, td.float64), 0, -1), np.arange(3.0, 0, -1), td.float64)
    check(td.range(2, limit=6, delta=td.constant(2, td.int64)), np.array([2, 4], np.int64), td.int64)


def test_range_of_extreme_int64_values_is_exact():
    big = 2**62
    check(td.range(-big, big, big // 2, dtype=td.int64), np.arange(-big, big, big // 2, dtype=np.int64))


def test_range_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match="requires delta != 0"):
        td.range(0, 5, 0)
    with pytest.raises(td.errors.InvalidArgumentError, match="requires start <= limit when delta > 0: 5/1"):
        td.range(5, 1)
    with pytest.raises(td.errors.InvalidArgumentError, match="requires start >= limit when delta < 0: 1/5"):
        td.range(1, 5, -1)
    with pytest.raises(td.errors.InvalidArgumentError, match="more than 2\\^40"):
        td.range(0, 2**62, 1, dtype=td.int64)
    with pytest.raises(td.errors.InvalidArgumentError, match="must be finite"):
        td.range(0.0, float("inf"))
    with pytest.raises(td.errors.InvalidArgumentError, match="'start' must be a scalar"):
        td.range(td.constant([1, 2]), 5)
    with pytest.raises(TypeError, match="range"):
        td.range(td.constant(True), 5)
    with pytest.raises(TypeError):
        td.range(1.5, dtype=td.int32)
