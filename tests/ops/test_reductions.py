"""Reductions (reduce_sum/mean/max/min/prod/all/any), argmax/argmin and add_n
against NumPy, with TensorFlow's conventions for empty reductions and
integer means."""

import numpy as np
import pytest

import treadle as td
from ._helpers import NUMERIC_DTYPES, assert_tensor, make_array, seeded_rng


def _int_mean(x, axis, keepdims):
    """TensorFlow's integer mean: a wrapping sum, then division truncated toward zero."""
    s = np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype).astype(np.int64)
    count = x.size // max(s.size, 1) if x.size else 0
    return (np.sign(s) * (np.abs(s) // count)).astype(x.dtype)


def reference(name, x, axis, keepdims):
    """NumPy's answer, computed the way TensorFlow defines it."""
    if isinstance(axis, list):
        axis = tuple(axis)
    if name == "reduce_sum":
        if x.dtype == np.float32:
            return np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(np.float32)
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    if name == "reduce_prod":
        if x.dtype == np.float32:
            return np.prod(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(np.float32)
        return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    if name == "reduce_mean":
        if np.issubdtype(x.dtype, np.integer):
            return _int_mean(x, axis, keepdims)
        return np.mean(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(x.dtype)
    if name == "reduce_max":
        return np.max(x, axis=axis, keepdims=keepdims)
    if name == "reduce_min":
        return np.min(x, axis=axis, keepdims=keepdims)
    if name == "reduce_all":
        return np.all(x, axis=axis, keepdims=keepdims)
    if name == "reduce_any":
        return np.any(x, axis=axis, keepdims=keepdims)
    raise AssertionError(name)


NUMERIC_REDUCTIONS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]

# (shape, axis) pairs; axis None means every axis.
AXIS_CASES = [
    ((), None), ((), []),
    ((6,), None), ((6,), 0), ((6,), -1), ((6,), []),
    ((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -2), ((3, 4), [0, 1]), ((3, 4), [1, 0]),
    ((2, 3, 4), [0, 2]), ((2, 3, 4), 1), ((2, 3, 4), [-1]), ((2, 3, 4), (0, 1)),
    ((3, 4, 5, 6), [0, 2]), ((3, 4, 5, 6), [1, 3]), ((3, 4, 5, 6), [0, 1, 3]), ((3, 4, 5, 6), [0, 3]),
    ((3, 4, 5, 6), [1, 2]), ((3, 1, 5, 1), [1, 2]), ((1, 4, 1, 6), [0, 2]),
    ((2, 1, 3), 1),
]


def _rtol(name, dtype):
    if not dtype.is_floating:
        return None
    return 2e-6 if dtype == td.float32 else 1e-12


@pytest.mark.parametrize("name", NUMERIC_REDUCTIONS)
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,axis", AXIS_CASES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True], ids=["drop", "keep"])
def test_reduction_matches_numpy(name, dtype, shape, axis, keepdims):
    rng = seeded_rng(name, dtype.name, shape, axis)
    low, high = (-2, 3) if name == "reduce_prod" else (-50, 50)
    x = make_array(rng, shape, dtype, low, high)
    fn = getattr(td, name)
    expected = reference(name, x, axis, keepdims)
    out = fn(td.constant(x), axis=axis, keepdims=keepdims)
    assert_tensor(out, expected, dtype, rtol=_rtol(name, dtype), atol=1e-4 if dtype == td.float32 else 0)
    # The same function lives in td.math.
    assert_tensor(getattr(td.math, name)(x, axis, keepdims), expected, dtype, rtol=_rtol(name, dtype),
                  atol=1e-4 if dtype == td.float32 else 0)


@pytest.mark.parametrize("name", ["reduce_all", "reduce_any"])
@pytest.mark.parametrize("shape,axis", AXIS_CASES + [((0,), None), ((2, 0), 1), ((2, 0), 0)], ids=str)
def test_bool_reductions_match_numpy(name, shape, axis):
    rng = seeded_rng(name, shape, axis)
    x = rng.random(shape) < 0.7
    for keepdims in (False, True):
        assert_tensor(getattr(td, name)(td.constant(x), axis=axis, keepdims=keepdims),
                      reference(name, x, axis, keepdims), td.bool)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_empty_reductions_give_the_identity(dtype):
    x = td.constant(np.zeros((0,), dtype.as_numpy_dtype))
    np_type = dtype.as_numpy_dtype
    assert_tensor(td.reduce_sum(x), np.array(0, np_type), dtype)
    assert_tensor(td.reduce_prod(x), np.array(1, np_type), dtype)
    if dtype.is_floating:
        assert_tensor(td.reduce_max(x), np.array(-np.inf, np_type), dtype)
        assert_tensor(td.reduce_min(x), np.array(np.inf, np_type), dtype)
        assert_tensor(td.reduce_mean(x), np.array(np.nan, np_type), dtype)
    else:
        info = np.iinfo(np_type)
        assert_tensor(td.reduce_max(x), np.array(info.min, np_type), dtype)
        assert_tensor(td.reduce_min(x), np.array(info.max, np_type), dtype)
        with pytest.raises(td.errors.InvalidArgumentError, match="Mean"):
            td.reduce_mean(x)
    # Reducing an empty axis of a non-empty output; reducing a non-empty axis of an empty tensor.
    y = td.constant(np.zeros((2, 0, 3), np_type))
    assert_tensor(td.reduce_sum(y, axis=1), np.zeros((2, 3), np_type), dtype)
    assert_tensor(td.reduce_prod(y, axis=1, keepdims=True), np.ones((2, 1, 3), np_type), dtype)
    assert_tensor(td.reduce_sum(y, axis=0), np.zeros((0, 3), np_type), dtype)
    assert_tensor(td.reduce_max(y, axis=[0, 2]), np.zeros((0,), np_type), dtype)


def test_integer_mean_truncates_toward_zero():
    assert td.reduce_mean(td.constant([1, 2])).numpy() == 1
    assert td.reduce_mean(td.constant([-1, -2])).numpy() == -1
    np.testing.assert_array_equal(td.reduce_mean(td.constant([[1, 2, 4], [-5, 0, 0]]), axis=1).numpy(), [2, -1])
    assert td.reduce_mean(td.constant([7, 8], dtype=td.int64)).dtype == td.int64


def test_max_and_min_propagate_nan():
    x = td.constant([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(td.reduce_max(x, axis=1).numpy(), [np.nan, 6.0])
    np.testing.assert_array_equal(td.reduce_min(x, axis=0).numpy(), [1.0, np.nan, 3.0])
    assert np.isnan(td.reduce_max(x).numpy())
    assert np.isnan(td.reduce_min(td.constant(np.r_[np.arange(20.0), np.nan]).numpy()))


def test_integer_sum_and_prod_wrap_like_int32():
    x = np.array([2**30, 2**30, 2**30], np.int32)
    assert td.reduce_sum(td.constant(x)).numpy() == np.sum(x, dtype=np.int32)
    y = np.full(5, 1000, np.int32)
    assert td.reduce_prod(td.constant(y)).numpy() == np.prod(y, dtype=np.int32)


def test_long_float32_sums_are_accurate():
    ones = td.constant(np.ones(1_000_003, np.float32))
    assert td.reduce_sum(ones).numpy() == 1_000_003
    x = np.full((3, 200_001), 0.1, np.float32)
    np.testing.assert_allclose(td.reduce_sum(td.constant(x), axis=1).numpy(), x.astype(np.float64).sum(axis=1),
                               rtol=1e-7)
    np.testing.assert_allclose(td.reduce_mean(td.constant(x.T.copy()), axis=0).numpy(), [0.1] * 3, rtol=1e-7)


@pytest.mark.parametrize("rows,cols", [(1000, 7), (7, 1000), (1, 9), (9, 1), (33, 65)])
def test_row_and_column_reductions(rows, cols):
    rng = seeded_rng("rc", rows, cols)
    x = rng.standard_normal((rows, cols))
    t = td.constant(x)
    for axis in (0, 1):
        np.testing.assert_allclose(td.reduce_sum(t, axis=axis).numpy(), x.sum(axis=axis), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(td.reduce_max(t, axis=axis).numpy(), x.max(axis=axis))
        np.testing.assert_array_equal(td.reduce_min(t, axis=axis).numpy(), x.min(axis=axis))


def test_axis_forms():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    t = td.constant(x)
    expected = x.sum(axis=(0, 2))
    for axis in ([0, 2], (0, 2), [-3, -1], np.array([0, 2]), np.array([2, 0], np.int64),
                 td.constant([0, 2]), td.constant([0, -1], dtype=td.int64)):
        np.testing.assert_array_equal(td.reduce_sum(t, axis=axis).numpy(), expected)
    np.testing.assert_array_equal(td.reduce_sum(t, axis=np.int64(1)).numpy(), x.sum(axis=1))
    np.testing.assert_array_equal(td.reduce_sum(t, axis=td.constant(1)).numpy(), x.sum(axis=1))
    # keepdims=None means False, as in TensorFlow
    assert td.reduce_sum(t, axis=0, keepdims=None).shape == (3, 4)


def test_python_values_are_converted():
    assert_tensor(td.reduce_sum([[1, 2], [3, 4]], axis=0), np.array([4, 6], np.int32), td.int32)
    assert_tensor(td.reduce_max([1.5, -2.0]), np.array(1.5, np.float32), td.float32)


@pytest.mark.parametrize("name", NUMERIC_REDUCTIONS + ["reduce_all"])
def test_axis_out_of_range_is_an_error(name):
    x = td.constant(np.zeros((2, 3), np.bool_ if name == "reduce_all" else np.float32))
    for axis in (2, -3, [0, 5]):
        with pytest.raises(td.errors.InvalidArgumentError, match="Invalid reduction dimension"):
            getattr(td, name)(x, axis=axis)


def test_duplicate_axes_are_an_error():
    with pytest.raises(td.errors.InvalidArgumentError, match="duplicate"):
        td.reduce_sum(td.constant(np.zeros((2, 3))), axis=[1, 1])
    with pytest.raises(td.errors.InvalidArgumentError, match="duplicate"):
        td.reduce_max(td.constant(np.zeros((2, 3))), axis=[0, -2])


def test_bad_axis_types_and_ranks():
    x = td.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="axis"):
        td.reduce_sum(x, axis=1.0)
    with pytest.raises(TypeError, match="axis"):
        td.reduce_sum(x, axis=td.constant(1.0))
    with pytest.raises(td.errors.InvalidArgumentError, match="axis"):
        td.reduce_sum(x, axis=[[0]])


def test_unsupported_dtypes_are_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match="Sum"):
        td.reduce_sum(td.constant([True, False]))
    with pytest.raises(td.errors.InvalidArgumentError, match="Max"):
        td.reduce_max(td.constant(["a"]))
    with pytest.raises(td.errors.InvalidArgumentError, match="All"):
        td.reduce_all(td.constant([1, 0]))


# ---------------------------------------------------------------- argmax / argmin

@pytest.mark.parametrize("fn,ref", [(td.argmax, np.argmax), (td.argmin, np.argmin),
                                    (td.math.argmax, np.argmax), (td.math.argmin, np.argmin)],
                         ids=["argmax", "argmin", "math.argmax", "math.argmin"])
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((7,), -1), ((3, 5), 0), ((3, 5), 1), ((2, 3, 4), 1),
                                        ((2, 3, 4), -1), ((2, 3, 4), 0), ((0, 4), 1)], ids=str)
def test_arg_reductions_match_numpy(fn, ref, dtype, shape, axis):
    rng = seeded_rng("arg", dtype.name, shape, axis)
    x = make_array(rng, shape, dtype, -3, 3)  # small range: ties happen; the first index wins
    if x.shape[axis] == 0 and x.size == 0:
        expected = np.zeros(np.delete(np.array(shape), axis), np.int64)
    else:
        expected = ref(x, axis=axis).astype(np.int64)
    assert_tensor(fn(td.constant(x), axis=axis), expected, td.int64)
    assert_tensor(fn(td.constant(x), axis, output_type=td.int32), expected.astype(np.int32), td.int32)


def test_argmax_defaults_to_axis_zero():
    x = np.array([[1, 9, 3], [4, 2, 6]])
    assert_tensor(td.argmax(x), np.array([1, 0, 1], np.int64), td.int64)
    assert_tensor(td.argmin(x), np.array([0, 1, 0], np.int64), td.int64)


def test_argmax_ties_and_nan():
    assert td.argmax(td.constant([1, 3, 3, 0])).numpy() == 1
    assert td.argmin(td.constant([2, 0, 5, 0])).numpy() == 1
    assert td.argmax(td.constant([1.0, np.nan, 5.0, np.nan])).numpy() == 1
    x = np.array([[1.0, 0.0], [np.nan, 2.0], [0.5, np.nan]])
    np.testing.assert_array_equal(td.argmin(td.constant(x)).numpy(), np.argmin(x, axis=0))  # NaN wins, as in NumPy


def test_arg_reduction_errors():
    x = td.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(td.errors.InvalidArgumentError, match="ArgMax"):
        td.argmax(x, axis=2)
    with pytest.raises(td.errors.InvalidArgumentError, match="ArgMin"):
        td.argmin(x, axis=-3)
    with pytest.raises(td.errors.InvalidArgumentError, match="empty"):
        td.argmax(td.constant(np.zeros((2, 0), np.float32)), axis=1)
    with pytest.raises(td.errors.InvalidArgumentError, match="output_type"):
        td.argmax(x, axis=0, output_type=td.float32)
    with pytest.raises(td.errors.InvalidArgumentError, match="ArgMax"):
        td.argmax(td.constant(5.0))
    with pytest.raises(td.errors.InvalidArgumentError, match="ArgMax"):
        td.argmax(td.constant([True, False]))


# ---------------------------------------------------------------- add_n

@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (0, 2)], ids=str)
def test_add_n_matches_numpy(dtype, shape):
    rng = seeded_rng("add_n", dtype.name, shape)
    arrays = [make_array(rng, shape, dtype) for _ in range(4)]
    tensors = [td.constant(a) for a in arrays]
    assert_tensor(td.add_n(tensors), sum(arrays[1:], arrays[0]), dtype)
    assert_tensor(td.math.add_n(tensors[:2]), arrays[0] + arrays[1], dtype)
    assert td.add_n(tensors[:1]) is tensors[0]


def test_add_n_converts_python_values():
    assert_tensor(td.add_n([[1, 2], [3, 4], td.constant([5, 6])]), np.array([9, 12], np.int32), td.int32)


def test_add_n_errors():
    with pytest.raises(ValueError, match="at least one"):
        td.add_n([])
    with pytest.raises(ValueError):
        td.add_n(td.constant([1, 2]))
    with pytest.raises(td.errors.InvalidArgumentError, match="AddN"):
        td.add_n([td.constant([1, 2]), td.constant([1, 2, 3])])
    with pytest.raises(td.errors.InvalidArgumentError, match="AddN"):
        td.add_n([td.constant([1, 2]), td.constant([1.0, 2.0])])
    with pytest.raises(td.errors.InvalidArgumentError, match="AddN"):
        td.add_n([td.constant([True]), td.constant([False])])


# ---------------------------------------------------------------- shape inference (graph construction)

def test_reduction_shapes_with_partial_information():
    from ._helpers import infer
    f, i = td.float32, td.int32
    assert infer("Sum", [f, i], [[None, 3, 4], [1]], [None, td.constant([1])]) == ([f], [(None, 4)])
    assert infer("Max", [f, i], [[None, 3, 4], [2]], [None, td.constant([0, -1])], {"keep_dims": True}) == \
        ([f], [(1, 3, 1)])
    # axis unknown: the rank survives only with keep_dims
    assert infer("Mean", [f, i], [[None, 3], [1]], None, {"keep_dims": True}) == ([f], [(None, None)])
    assert infer("Mean", [f, i], [[None, 3], [1]], None) == ([f], [None])
    assert infer("Prod", [f, i], [None, [1]], [None, td.constant([0])]) == ([f], [None])
    with pytest.raises(ValueError, match="Invalid reduction dimension 5"):
        infer("Sum", [f, i], [[2, 3], [1]], [None, td.constant([5])])
    with pytest.raises(ValueError, match="duplicate"):
        infer("Sum", [f, i], [[2, 3], [2]], [None, td.constant([1, -1])])
    with pytest.raises(ValueError, match="scalar or vector"):
        infer("Sum", [f, i], [[2, 3], [1, 1]], None)


def test_arg_and_add_n_shapes_with_partial_information():
    from ._helpers import infer
    f, i = td.float32, td.int32
    assert infer("ArgMax", [f, i], [[None, 3, 4], []], [None, td.constant(1)]) == ([td.int64], [(None, 4)])
    assert infer("ArgMin", [f, i], [[None, 3, 4], []], None, {"output_type": td.int32}) == \
        ([td.int32], [(None, None)])
    assert infer("AddN", [f] * 3, [[None, 3], [2, None], None]) == ([f], [(2, 3)])
    with pytest.raises(ValueError, match="same shape"):
        infer("AddN", [f] * 2, [[None, 3], [2, 4]])
    with pytest.raises(TypeError, match="output_type"):
        infer("ArgMax", [f, i], [[2], []], None, {"output_type": td.float32})
