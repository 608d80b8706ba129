"""td.vectorized_map returns what fn returns (structure and dtypes), as
TensorFlow's does, whatever elems hold."""

import numpy as np

import treadle as td


def test_results_of_other_structure_and_dtype_than_elems():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.array([1, 2, 3], np.int32)

    def fn(elems):
        a, b = elems
        return {"sum": td.reduce_sum(a), "scaled": a * td.cast(b, td.float32), "flag": b > 1}

    out = td.vectorized_map(fn, (td.constant(x), td.constant(y)))
    np.testing.assert_allclose(out["sum"].numpy(), x.sum(axis=1))
    np.testing.assert_allclose(out["scaled"].numpy(), x * y[:, None])
    np.testing.assert_array_equal(out["flag"].numpy(), y > 1)


def test_inside_a_td_function():
    @td.function
    def f(x):
        return td.vectorized_map(lambda row: (td.reduce_max(row), td.argmax(row)), x)

    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
    top, where = f(td.constant(x))
    np.testing.assert_allclose(top.numpy(), x.max(axis=1))
    np.testing.assert_array_equal(where.numpy(), x.argmax(axis=1))
