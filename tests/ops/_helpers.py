"""Shared helpers of the op tests: NumPy data per dtype and comparisons."""

import zlib

import numpy as np

import treadle as td

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0,), (2, 0, 3)]
FLOAT_DTYPES = [td.float32, td.float64]
INT_DTYPES = [td.int32, td.int64]
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES


def make_array(rng, shape, dtype, low=-5, high=5):
    """Random NumPy data of `dtype` (a td dtype) in [low, high)."""
    np_dtype = dtype.as_numpy_dtype
    if dtype == td.bool:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype == td.string:
        words = np.array([b"a", b"bc", b"", b"xyz", b"\xc3\xa9"], dtype=object)
        return np.asarray(words[rng.integers(0, len(words), size=shape)], dtype=object)
    if dtype.is_integer:
        return rng.integers(low, high, size=shape).astype(np_dtype)
    return rng.uniform(low, high, size=shape).astype(np_dtype)


def tolerance(dtype):
    return {"float32": 2e-6, "float64": 1e-13}.get(dtype.name, 0)


def assert_tensor(result, expected, dtype=None, rtol=None, atol=0.0):
    """`result` (a td.Tensor) has `expected`'s shape, the dtype `dtype` (or
    expected's), and its values: exactly for ints, bools and strings, within
    rtol for floats (NaNs must match)."""
    assert isinstance(result, td.Tensor), type(result)
    expected = np.asarray(expected)
    if dtype is not None:
        assert result.dtype == dtype, (result.dtype, dtype)
    else:
        assert result.dtype.as_numpy_dtype == expected.dtype or result.dtype == td.string, \
            (result.dtype, expected.dtype)
    got = result.numpy()
    assert np.shape(got) == expected.shape, (np.shape(got), expected.shape)
    if result.dtype.is_floating:
        rtol = tolerance(result.dtype) if rtol is None else rtol
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def seeded_rng(*parts):
    """A NumPy generator seeded from `parts` (stable across runs, unlike hash())."""
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def infer(op_name, dtypes, shapes, values=None, attrs=None):
    """Output (dtypes, shapes) of `op_name` as graph construction sees them:
    shapes may hold None dims (or be None), values are known only where given."""
    from treadle import _core
    from treadle.framework.op_execution import op_handle
    out_dtypes, out_shapes, _ = _core.infer(op_handle(op_name), dtypes, shapes, values, attrs or {})
    return list(out_dtypes), [None if s is None else tuple(s) for s in out_shapes]
