"""Shared helpers of the array-op tests: sample data of every dtype and an
exact comparison with NumPy."""

import numpy as np

import treadle as td

ALL_DTYPES = [td.float32, td.float64, td.int32, td.int64, td.bool, td.string]
NUMERIC_DTYPES = [td.float32, td.float64, td.int32, td.int64]


def sample(shape, dtype, seed=0):
    """A NumPy array of `shape` with values of treadle dtype `dtype` (strings as bytes)."""
    rng = np.random.default_rng(seed)
    dtype = td.as_dtype(dtype)
    shape = tuple(shape)
    if dtype == td.string:
        n = int(np.prod(shape, dtype=np.int64))
        return np.array([f"s{v}".encode() for v in rng.integers(0, 1000, size=n)], dtype=object).reshape(shape)
    if dtype == td.bool:
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        return rng.integers(-50, 50, size=shape).astype(dtype.as_numpy_dtype)
    return rng.standard_normal(shape).astype(dtype.as_numpy_dtype)


def check(t, expected, dtype=None):
    """Asserts that tensor `t` equals `expected` exactly, shape included."""
    assert isinstance(t, td.Tensor), type(t)
    expected = np.asarray(expected)
    got = np.asarray(t.numpy())
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    assert got.shape == expected.shape
    if dtype is not None:
        assert t.dtype == dtype, (t.dtype, dtype)
    np.testing.assert_array_equal(got, expected)


def infer(op_name, dtypes, shapes, values=None, attrs=None):
    """Graph-construction shape inference of one op call: (dtypes, shapes)."""
    out_dtypes, out_shapes, _ = td._core.infer(td._core.lookup_op(op_name), dtypes, shapes, values, attrs or {})
    return out_dtypes, out_shapes


def const(value, dtype=td.int32):
    """A constant integer tensor (a value known to shape inference)."""
    return td.constant(value, dtype=dtype)
