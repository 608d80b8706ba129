"""Shape-changing array ops (reshape, expand_dims, squeeze, identity,
transpose) and shape queries (shape, size, rank), against NumPy."""

import itertools

import numpy as np
import pytest

import treadle as td
try:  # tests/ops as a package, or as a plain directory on sys.path
    from .array_testing import ALL_DTYPES, check, sample
except ImportError:
    from array_testing import ALL_DTYPES, check, sample

# ---------------------------------------------------------------- reshape

RESHAPES = [
    ((2, 3, 4), [4, 6]),
    ((2, 3, 4), [-1]),
    ((2, 3, 4), [2, -1, 3]),
    ((6,), [3, 2]),
    ((), [1, 1]),
    ((1,), []),
    ((0, 3), [3, 0]),
    ((0, 3), [-1, 3]),
    ((5, 1), [1, 5]),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,new_shape", RESHAPES)
def test_reshape_matches_numpy(dtype, shape, new_shape):
    x = sample(shape, dtype)
    out = td.reshape(td.constant(x), new_shape)
    check(out, x.reshape(new_shape), dtype)


def test_reshape_shares_the_buffer():
    x = td.constant(np.arange(12, dtype=np.float32))
    y = td.reshape(x, [3, 4])
    assert y._same_buffer(x)


def test_reshape_accepts_tensor_shape_and_int64_shape():
    x = td.constant(np.arange(12))
    check(td.reshape(x, td.TensorShape([3, 4])), np.arange(12).reshape(3, 4))
    check(td.reshape(x, td.constant([2, 6], dtype=td.int64)), np.arange(12).reshape(2, 6))
    check(td.reshape(x, (2, 2, 3)), np.arange(12).reshape(2, 2, 3))
    check(td.reshape(x, np.array([4, 3])), np.arange(12).reshape(4, 3))


def test_reshape_errors():
    x = td.constant(np.arange(6))
    with pytest.raises(td.errors.InvalidArgumentError, match="tensor with 6 values, but the requested shape has 4"):
        td.reshape(x, [2, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match="requires a multiple of 4"):
        td.reshape(x, [4, -1])
    with pytest.raises(td.errors.InvalidArgumentError, match="only one input size may be -1"):
        td.reshape(x, [-1, -1])
    with pytest.raises(td.errors.InvalidArgumentError, match="size 1 must be non-negative, not -2"):
        td.reshape(x, [3, -2])
    with pytest.raises(td.errors.InvalidArgumentError, match="'shape' must be a vector"):
        td.reshape(x, [[2, 3]])
    with pytest.raises(td.errors.InvalidArgumentError, match="empty tensor"):
        td.reshape(td.zeros([0, 2]), [0, -1])
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="shape"):
        td.reshape(x, [2.0, 3.0])
    with pytest.raises(ValueError, match="partially known TensorShape"):
        td.reshape(x, td.TensorShape([None, 3]))


def test_reshape_huge_shape_is_an_error_not_an_overflow():
    with pytest.raises(td.errors.InvalidArgumentError, match="2\\^40"):
        td.reshape(td.constant([1.0]), [2**31, 2**31, 2**31])


# ---------------------------------------------------------------- expand_dims / squeeze

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [-4, -3, -2, -1, 0, 1, 2, 3])
def test_expand_dims_matches_numpy(dtype, axis):
    x = sample((2, 3, 4), dtype)
    t = td.constant(x)
    out = td.expand_dims(t, axis)
    check(out, np.expand_dims(x, axis), dtype)
    assert out._same_buffer(t)


def test_expand_dims_scalar_and_tensor_axis():
    check(td.expand_dims(td.constant(5), 0), np.array([5]))
    check(td.expand_dims(td.constant([1, 2]), td.constant(1)), np.array([[1], [2]]))
    check(td.expand_dims(td.constant([1, 2]), td.constant([0], dtype=td.int64)), np.array([[1, 2]]))


def test_expand_dims_errors():
    t = td.constant(np.zeros((2, 3)))
    for axis in (3, -4, 100):
        with pytest.raises(td.errors.InvalidArgumentError, match=f"expand dim index {axis} for tensor with 2"):
            td.expand_dims(t, axis)
    with pytest.raises(td.errors.InvalidArgumentError, match="'axis' must be a scalar"):
        td.expand_dims(t, td.constant([0, 1]))
    with pytest.raises(TypeError, match="axis"):
        td.expand_dims(t, 1.5)
    with pytest.raises(ValueError, match="axis"):
        td.expand_dims(t, None)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 2, -1, [0, 3], (-4, 2)])
def test_squeeze_matches_numpy(dtype, axis):
    x = sample((1, 3, 1, 1), dtype)
    t = td.constant(x)
    out = td.squeeze(t, axis)
    check(out, np.squeeze(x, axis=None if axis is None else tuple(np.atleast_1d(axis))), dtype)
    assert out._same_buffer(t)


def test_squeeze_of_nothing_and_empty():
    check(td.squeeze(td.constant([1, 2])), np.array([1, 2]))
    check(td.squeeze(td.zeros([1, 0, 1])), np.zeros((0,), np.float32))
    check(td.squeeze(td.constant([[7]])), np.array(7))


def test_squeeze_errors():
    t = td.zeros([1, 3, 1])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"can not squeeze dim\[1\], expected a dimension of 1, got 3"):
        td.squeeze(t, 1)
    with pytest.raises(td.errors.InvalidArgumentError, match="squeeze dim index 3 for tensor with 3 dimensions"):
        td.squeeze(t, [0, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="squeeze dim index -4"):
        td.squeeze(t, -4)


# ---------------------------------------------------------------- identity

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_identity_returns_the_same_buffer(dtype):
    x = sample((3, 2), dtype)
    t = td.constant(x)
    out = td.identity(t)
    check(out, x, dtype)
    assert out._same_buffer(t)
    check(td.identity([1.5, 2.5]), np.array([1.5, 2.5], np.float32))


# ---------------------------------------------------------------- shape, size, rank

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 5), (2, 3, 4, 1)])
def test_shape_size_rank(dtype, shape):
    t = td.constant(sample(shape, dtype))
    check(td.shape(t), np.array(shape, np.int32), td.int32)
    check(td.shape(t, out_type=td.int64), np.array(shape, np.int64), td.int64)
    check(td.size(t), np.int32(np.prod(shape, dtype=np.int64)), td.int32)
    check(td.size(t, out_type=td.int64), np.int64(np.prod(shape, dtype=np.int64)), td.int64)
    check(td.rank(t), np.int32(len(shape)), td.int32)


def test_shape_of_python_values():
    check(td.shape([[1, 2, 3], [4, 5, 6]]), np.array([2, 3], np.int32))
    check(td.size(3.0), np.int32(1))
    check(td.rank([[1.0]]), np.int32(2))


def test_shape_out_type_must_be_an_integer_type():
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="out_type must be int32 or int64"):
        td.shape(td.constant([1.0]), out_type=td.float32)
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="out_type must be int32 or int64"):
        td.size(td.constant([1.0]), out_type=td.string)


# ---------------------------------------------------------------- transpose

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 1, 2)])
def test_transpose_default_reverses_dims(dtype, shape):
    x = sample(shape, dtype)
    check(td.transpose(td.constant(x)), np.transpose(x), dtype)


@pytest.mark.parametrize("dtype", [td.float32, td.int64, td.bool, td.string])
@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_transpose_every_permutation_of_rank_3(dtype, perm):
    x = sample((2, 3, 4), dtype)
    check(td.transpose(td.constant(x), perm), np.transpose(x, perm), dtype)


@pytest.mark.parametrize("perm", [(0, 2, 1, 3), (3, 2, 1, 0), (1, 0, 3, 2), (2, 3, 0, 1), (0, 1, 3, 2)])
def test_transpose_rank_4(perm):
    x = sample((3, 4, 5, 6), td.float64)
    check(td.transpose(x, perm), np.transpose(x, perm))


@pytest.mark.parametrize("shape", [(70, 45), (33, 1, 65), (1, 40, 1, 37)])
def test_transpose_larger_than_a_tile(shape):
    x = sample(shape, td.int32)
    check(td.transpose(td.constant(x)), x.T)


def test_transpose_with_size_one_dims_and_empty():
    x = sample((1, 4, 1), td.float32)
    check(td.transpose(x, [2, 0, 1]), np.transpose(x, [2, 0, 1]))
    check(td.transpose(td.zeros([0, 3]), [1, 0]), np.zeros((3, 0), np.float32))


def test_transpose_identity_permutation_shares_buffer():
    t = td.constant(sample((2, 3), td.float32))
    assert td.transpose(t, [0, 1])._same_buffer(t)
    # Moving only size-1 dimensions keeps the layout too.
    t = td.constant(sample((1, 3, 1), td.float32))
    assert td.transpose(t, [2, 1, 0])._same_buffer(t)


def test_transpose_perm_as_tensor():
    x = sample((2, 3, 4), td.int32)
    check(td.transpose(x, td.constant([1, 2, 0], dtype=td.int64)), np.transpose(x, [1, 2, 0]))


def test_transpose_errors():
    t = td.zeros([2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="transpose expects a vector of size 2"):
        td.transpose(t, [0, 1, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match="perm value 1 is duplicated"):
        td.transpose(t, [1, 1])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"perm value 2 is out of range \[0 .. 2\)"):
        td.transpose(t, [0, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match="perm value -1 is out of range"):
        td.transpose(t, [-1, 0])
