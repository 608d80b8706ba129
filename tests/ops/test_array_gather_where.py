"""gather (with axis and batch_dims), where (select and coordinates),
one_hot and tile, against NumPy."""

import inspect

import numpy as np
import pytest

import treadle as td
try:  # tests/ops as a package, or as a plain directory on sys.path
    from .array_testing import ALL_DTYPES, NUMERIC_DTYPES, check, sample
except ImportError:
    from array_testing import ALL_DTYPES, NUMERIC_DTYPES, check, sample

# ---------------------------------------------------------------- gather


def numpy_gather(params, indices, axis, batch_dims):
    """Reference gather: loops over the batch dimensions and uses np.take."""
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([numpy_gather(p, i, axis - 1, batch_dims - 1) for p, i in zip(params, indices)])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("index_dtype", [td.int32, td.int64])
def test_gather_matches_numpy(dtype, axis, index_dtype):
    params = sample((3, 4, 5), dtype)
    n = params.shape[axis]
    indices = np.array([[0, n - 1, 1], [n - 1, 0, 0]])
    out = td.gather(td.constant(params), td.constant(indices, index_dtype), axis=axis)
    check(out, np.take(params, indices, axis=axis), dtype)


@pytest.mark.parametrize("dtype", [td.float32, td.int64, td.bool, td.string])
@pytest.mark.parametrize("batch_dims,axis", [(1, 1), (1, 2), (2, 2), (-1, 2), (1, -1)])
def test_gather_with_batch_dims(dtype, batch_dims, axis):
    params = sample((2, 3, 4), dtype)
    rng = np.random.default_rng(1)
    indices = rng.integers(0, params.shape[axis], size=(2, 3, 2) if batch_dims in (2, -1) else (2, 5))
    bd = batch_dims % indices.ndim if batch_dims < 0 else batch_dims
    ax = axis % params.ndim
    out = td.gather(params, indices, axis=axis, batch_dims=batch_dims)
    check(out, numpy_gather(params, indices, ax, bd), dtype)


def test_gather_axis_defaults_to_batch_dims():
    params = sample((2, 4), td.float64)
    indices = np.array([[3, 0], [1, 1]])
    check(td.gather(params, indices, batch_dims=1), numpy_gather(params, indices, 1, 1))
    check(td.gather(params, indices % 2), params[indices % 2])


def test_gather_takes_its_arguments_by_keyword_as_tensorflow_names_them():
    # td.gather's entry is a C function: its parameters keep TensorFlow's names and defaults.
    params = sample((3, 2), td.float32)
    check(td.gather(params=params, indices=[2, 0], validate_indices=True, axis=0, batch_dims=0, name="rows"),
          params[[2, 0]])
    check(td.gather(params, indices=[1], axis=1), params[:, [1]])
    assert list(inspect.signature(td.gather).parameters) == ["params", "indices", "validate_indices", "axis",
                                                             "batch_dims", "name"]
    with pytest.raises(TypeError):
        td.gather(params)


def test_gather_scalar_and_empty_indices():
    params = sample((3, 2), td.int32)
    check(td.gather(params, 2), params[2])
    check(td.gather(params, np.zeros((0,), np.int32)), np.zeros((0, 2), np.int32))
    check(td.gather(params, np.zeros((2, 0), np.int64), axis=1), np.zeros((3, 2, 0), np.int32))
    check(td.gather(np.arange(5), [4, 0, 4, 4]), np.array([4, 0, 4, 4]))


def test_gather_large_rows_use_block_copies():
    params = sample((50, 300), td.float32)
    indices = np.random.default_rng(3).integers(0, 50, size=200)
    check(td.gather(params, indices), params[indices])


def test_gather_out_of_range_index_is_invalid_argument():
    params = td.constant([1.0, 2.0, 3.0])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 3\)"):
        td.gather(params, [0, 5])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"indices\[0\] = -1 is not in \[0, 3\)"):
        td.gather(params, [-1])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"indices\[1,0\] = 3 is not in \[0, 3\)"):
        td.gather(params, [[0, 1], [3, 0]])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"indices = 7 is not in \[0, 3\)"):
        td.gather(params, 7)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"indices\[0\] = 0 is not in \[0, 0\)"):
        td.gather(td.zeros([0, 2]), [0])
    assert issubclass(td.errors.InvalidArgumentError, td.errors.OpError)


def test_gather_argument_errors():
    params = td.zeros([2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"expected axis in the range \[-2, 2\), but got 2"):
        td.gather(params, [0], axis=2)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"batch_dims in the range \[-1, 1\], but got 2"):
        td.gather(params, [0], axis=1, batch_dims=2)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"batch_dims \(1\) must be less than or equal to axis \(0\)"):
        td.gather(params, [[0], [1]], axis=0, batch_dims=1)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"params.shape\[0\]: 2 should be equal to indices.shape\[0\]: 3"):
        td.gather(params, [[0], [1], [0]], axis=1, batch_dims=1)
    with pytest.raises(td.errors.InvalidArgumentError, match="params must be at least 1 dimensional"):
        td.gather(td.constant(1.0), [0])
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="indices"):
        td.gather(params, [0.5])


# ---------------------------------------------------------------- where


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("cshape,xshape,yshape", [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3), (), (2, 3)),
    ((3,), (2, 3), ()),
    ((2, 1), (1, 3), (2, 3)),
    ((), (2, 3), (2, 3)),
    ((4, 1, 2), (3, 1), (1,)),
    ((0, 2), (1, 2), ()),
])
def test_where_selects_with_broadcasting(dtype, cshape, xshape, yshape):
    cond = sample(cshape, td.bool, seed=5)
    x, y = sample(xshape, dtype, seed=1), sample(yshape, dtype, seed=2)
    out = td.where(td.constant(cond), td.constant(x), td.constant(y))
    check(out, np.where(cond, x, y), dtype)


def test_where_with_python_values_and_scalar_condition():
    check(td.where([True, False], td.constant([1.5, 2.5], td.float64), 0), np.array([1.5, 0.0]), td.float64)
    check(td.where([True, False], 1, td.constant([7, 8], td.int64)), np.array([1, 8]), td.int64)
    a, b = td.constant([1, 2]), td.constant([3, 4])
    assert td.where(True, a, b)._same_buffer(a)
    assert td.where(False, a, b)._same_buffer(b)


@pytest.mark.parametrize("dtype", [td.bool] + NUMERIC_DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (0, 3)])
def test_where_gives_coordinates_of_true_elements(dtype, shape):
    x = sample(shape, dtype, seed=3)
    if dtype.is_numeric:
        x = np.where(sample(shape, td.bool), x, 0).astype(dtype.as_numpy_dtype)
    out = td.where(td.constant(x))
    check(out, np.argwhere(x).astype(np.int64), td.int64)


def test_where_errors():
    with pytest.raises(ValueError, match="x and y must both be non-None or both be None"):
        td.where([True], x=[1])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. \[3\]"):
        td.where([True, False], [1, 2, 3], 0)
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="condition"):
        td.where(td.constant([1, 0]), [1, 2], [3, 4])
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="does not match"):
        td.where([True], td.constant([1.0]), td.constant([1], td.int32))
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="string"):
        td.where(td.constant(["a"]))


# ---------------------------------------------------------------- one_hot


def numpy_one_hot(indices, depth, on, off, axis, dtype):
    indices = np.asarray(indices)
    hot = indices[..., None] == np.arange(depth)
    out = np.where(hot, on, off).astype(dtype)
    return np.moveaxis(out, -1, axis if axis != -1 else -1)


@pytest.mark.parametrize("axis", [None, -1, 0, 1, 2])
@pytest.mark.parametrize("index_dtype", [td.int32, td.int64])
def test_one_hot_matches_numpy(axis, index_dtype):
    indices = np.array([[0, 2, 5], [1, -1, 3]])
    out = td.one_hot(td.constant(indices, index_dtype), 4, axis=axis)
    check(out, numpy_one_hot(indices, 4, 1, 0, -1 if axis is None else axis, np.float32), td.float32)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_one_hot_values_of_every_dtype(dtype):
    on, off = sample((2,), dtype, seed=7)
    out = td.one_hot([2, 0, 9], 3, on_value=td.constant(on), off_value=td.constant(off))
    check(out, numpy_one_hot([2, 0, 9], 3, on, off, -1, on.dtype if dtype != td.string else object), dtype)


def test_one_hot_dtype_rules():
    check(td.one_hot([1], 2, dtype=td.int64), np.array([[0, 1]]), td.int64)
    check(td.one_hot([1], 2, dtype=td.bool), np.array([[False, True]]), td.bool)
    check(td.one_hot([1], 2, on_value=5, off_value=-1), np.array([[-1, 5]], np.int32), td.int32)
    check(td.one_hot([1], 2, on_value=2.0, dtype=td.float64), np.array([[0.0, 2.0]]), td.float64)
    check(td.one_hot(3, 4), np.array([0, 0, 0, 1], np.float32))
    check(td.one_hot([0, 1], 0), np.zeros((2, 0), np.float32))


def test_one_hot_errors():
    with pytest.raises(TypeError, match="of on_value does not match dtype parameter"):
        td.one_hot([0], 2, on_value=td.constant(1), dtype=td.float32)
    with pytest.raises(TypeError, match="of on_value does not match dtype"):
        td.one_hot([0], 2, on_value=td.constant(1.0), off_value=td.constant(0))
    with pytest.raises(td.errors.InvalidArgumentError, match="depth must be non-negative, got: -1"):
        td.one_hot([0], -1)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"expected axis to be -1 or between \[0, 1\]. But received: 2"):
        td.one_hot([0], 2, axis=2)
    with pytest.raises(td.errors.InvalidArgumentError, match="'depth' must be a scalar"):
        td.one_hot([0], [2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="on_value' must be a scalar"):
        td.one_hot([0], 2, on_value=[1.0, 2.0], off_value=0.0)


# ---------------------------------------------------------------- tile


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,multiples", [
    ((), []),
    ((3,), [4]),
    ((2, 3), [1, 1]),
    ((2, 3), [3, 2]),
    ((1, 1), [5, 7]),
    ((2, 1, 3), [2, 5, 1]),
    ((2, 3), [0, 2]),
    ((0, 3), [2, 2]),
])
def test_tile_matches_numpy(dtype, shape, multiples):
    x = sample(shape, dtype)
    out = td.tile(td.constant(x), multiples)
    check(out, np.tile(x, multiples) if shape else x, dtype)


def test_tile_many_small_copies():
    x = sample((3, 1), td.float64)
    check(td.tile(x, [2, 1000]), np.tile(x, [2, 1000]))
    check(td.tile(x, td.constant([1, 3], td.int64)), np.tile(x, [1, 3]))


def test_tile_errors():
    x = td.zeros([2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="multiples argument to be a vector of length 2 but got length 3"):
        td.tile(x, [1, 2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"expected multiples\[1\] >= 0, but got -2"):
        td.tile(x, [1, -2])
    with pytest.raises(td.errors.InvalidArgumentError, match="2\\^40"):
        td.tile(x, [2**30, 2**30])
