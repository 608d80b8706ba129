"""td.matmul and `@` against NumPy: 2-D, transpose flags, batches with
broadcast batch dims, integer and float64 inputs, and shape errors."""

import numpy as np
import pytest

import treadle as td
from ._helpers import NUMERIC_DTYPES, assert_tensor, make_array, seeded_rng


def _rtol(dtype):
    return {"float32": 1e-5, "float64": 1e-12}.get(dtype.name, 0)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 4, 5), (7, 1, 2), (16, 33, 9)], ids=str)
def test_2d_matches_numpy(dtype, m, k, n):
    rng = seeded_rng("mm", dtype.name, m, k, n)
    a = make_array(rng, (m, k), dtype)
    b = make_array(rng, (k, n), dtype)
    expected = a @ b
    assert_tensor(td.matmul(td.constant(a), td.constant(b)), expected, dtype, rtol=_rtol(dtype), atol=1e-5)
    assert_tensor(td.constant(a) @ td.constant(b), expected, dtype, rtol=_rtol(dtype), atol=1e-5)
    assert_tensor(td.matmul(a, b), expected, dtype, rtol=_rtol(dtype), atol=1e-5)  # NumPy operands


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_transpose_flags(dtype, transpose_a, transpose_b):
    rng = seeded_rng("mmt", dtype.name, transpose_a, transpose_b)
    a = make_array(rng, (4, 3) if transpose_a else (3, 4), dtype)
    b = make_array(rng, (5, 4) if transpose_b else (4, 5), dtype)
    expected = (a.T if transpose_a else a) @ (b.T if transpose_b else b)
    out = td.matmul(td.constant(a), td.constant(b), transpose_a=transpose_a, transpose_b=transpose_b)
    assert_tensor(out, expected, dtype, rtol=_rtol(dtype), atol=1e-5)


# Products large enough for the kernel to split them over treadle's threads:
# by rows (many rows), by columns (few rows, many columns), with every
# transpose, and with row counts that do not divide evenly.
@pytest.mark.parametrize("dtype", [td.float32, td.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("m,k,n", [(301, 203, 97), (8, 129, 4001), (33, 1000, 17)], ids=str)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_large_products_split_over_threads_match_numpy(dtype, m, k, n, transpose_a, transpose_b):
    rng = seeded_rng("mm-large", dtype.name, m, k, n, transpose_a, transpose_b)
    a = make_array(rng, (k, m) if transpose_a else (m, k), dtype)
    b = make_array(rng, (n, k) if transpose_b else (k, n), dtype)
    expected = (a.T if transpose_a else a) @ (b.T if transpose_b else b)
    out = td.matmul(td.constant(a), td.constant(b), transpose_a=transpose_a, transpose_b=transpose_b)
    rtol = 1e-4 if dtype == td.float32 else 1e-11
    assert_tensor(out, expected, dtype, rtol=rtol, atol=rtol * np.sqrt(k))


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("a_shape,b_shape", [
    ((2, 3, 4), (2, 4, 5)),      # same batch
    ((2, 1, 3, 4), (5, 4, 2)),   # broadcast batch dims on both sides
    ((3, 4), (2, 4, 5)),         # a matrix against a batch
    ((6, 2, 3), (3, 2)),         # a batch against a matrix
    ((1, 2, 3), (4, 3, 1)),
    ((0, 2, 3), (3, 4)),         # empty batch
], ids=str)
def test_batched_matches_numpy(dtype, a_shape, b_shape):
    rng = seeded_rng("bmm", dtype.name, a_shape, b_shape)
    a = make_array(rng, a_shape, dtype)
    b = make_array(rng, b_shape, dtype)
    expected = np.matmul(a, b)
    assert_tensor(td.matmul(td.constant(a), td.constant(b)), expected, dtype, rtol=_rtol(dtype), atol=1e-5)
    assert_tensor(td.constant(a) @ td.constant(b), expected, dtype, rtol=_rtol(dtype), atol=1e-5)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_batched_transpose_flags(dtype):
    rng = seeded_rng("bmmt", dtype.name)
    a = make_array(rng, (3, 4, 2), dtype)
    b = make_array(rng, (3, 5, 4), dtype)
    expected = np.matmul(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2))
    out = td.matmul(td.constant(a), td.constant(b), transpose_a=True, transpose_b=True)
    assert_tensor(out, expected, dtype, rtol=_rtol(dtype), atol=1e-5)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_empty_inner_dimension_gives_zeros(dtype):
    a = np.zeros((3, 0), dtype.as_numpy_dtype)
    b = np.zeros((0, 2), dtype.as_numpy_dtype)
    assert_tensor(td.matmul(td.constant(a), td.constant(b)), np.zeros((3, 2), dtype.as_numpy_dtype), dtype)
    assert_tensor(td.matmul(td.constant(np.zeros((0, 3), a.dtype)), td.constant(np.zeros((3, 2), a.dtype))),
                  np.zeros((0, 2), a.dtype), dtype)


def test_int_matmul_is_exact_and_wraps():
    a = np.array([[2**20, 3], [1, -1]], np.int64)
    b = np.array([[2**20, 0], [7, 5]], np.int64)
    assert_tensor(td.matmul(td.constant(a), td.constant(b)), a @ b, td.int64)
    big = np.full((1, 2), 2**30, np.int32)
    out = td.matmul(td.constant(big), td.constant(big.T.copy()))
    assert_tensor(out, (big.astype(np.int64) @ big.T.astype(np.int64)).astype(np.int32), td.int32)


def test_float64_precision():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 60))
    b = rng.standard_normal((60, 40))
    out = td.matmul(td.constant(a), td.constant(b))
    assert out.dtype == td.float64
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("a_shape,b_shape,flags", [
    ((2, 3), (2, 3), {}),
    ((2, 3), (4, 5), {}),
    ((3, 2), (3, 2), {"transpose_a": True, "transpose_b": True}),
    ((2, 3, 4), (2, 5, 6), {}),
], ids=str)
def test_size_incompatible_is_an_error(a_shape, b_shape, flags):
    a = td.constant(np.zeros(a_shape, np.float32))
    b = td.constant(np.zeros(b_shape, np.float32))
    with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="Matrix size-incompatible"):
        td.matmul(a, b, **flags)
    if not flags:
        with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="Matrix size-incompatible"):
            a @ b


def test_incompatible_batch_dims_are_an_error():
    a = td.constant(np.zeros((2, 3, 4), np.float32))
    b = td.constant(np.zeros((3, 4, 5), np.float32))
    with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="Incompatible shapes"):
        td.matmul(a, b)


def test_rank_below_two_is_an_error():
    with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="rank"):
        td.matmul(td.constant([1.0, 2.0]), td.constant([[1.0], [2.0]]))
    with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="rank"):
        td.constant(3.0) @ td.constant(2.0)


def test_dtype_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match="MatMul"):
        td.matmul(td.constant([[1.0]]), td.constant([[1]]))
    with pytest.raises(td.errors.InvalidArgumentError, match="bool"):
        td.matmul(td.constant([[True]]), td.constant([[False]]))
