"""Element-wise binary ops on td.RaggedTensor, as TensorFlow dispatches them:
same rows -> the op on the flat values; ragged with a scalar -> every value."""

import numpy as np
import pytest

import treadle as td


def test_two_ragged_tensors_of_the_same_rows():
    a = td.RaggedTensor.from_row_lengths([1, 2, 3], [2, 1])
    b = td.RaggedTensor.from_row_lengths([1, 5, 3], [2, 1])
    eq = td.equal(a, b)
    assert isinstance(eq, td.RaggedTensor)
    np.testing.assert_array_equal(eq.flat_values.numpy(), [True, False, True])
    np.testing.assert_array_equal(eq.row_splits.numpy(), [0, 2, 3])
    np.testing.assert_array_equal(td.subtract(b, a).flat_values.numpy(), np.array([1, 5, 3]) - [1, 2, 3])
    assert td.reduce_all(td.equal(a, a)).numpy()
    assert not td.reduce_all(eq).numpy()


def test_a_ragged_tensor_and_a_scalar():
    a = td.RaggedTensor.from_row_lengths([1.0, 2.0, 3.0], [1, 2])
    np.testing.assert_array_equal(td.multiply(a, 2.0).flat_values.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(td.subtract(10.0, a).flat_values.numpy(), [9.0, 8.0, 7.0])
    np.testing.assert_array_equal(td.greater(a, 1.5).flat_values.numpy(), [False, True, True])


def test_inside_a_function():
    f = td.function(lambda x, y: td.reduce_all(td.equal(x, y)))
    a = td.RaggedTensor.from_row_lengths([4, 5, 6], [1, 2])
    assert f(a, a).numpy()
    assert not f(a, td.RaggedTensor.from_row_lengths([4, 5, 7], [1, 2])).numpy()


def test_different_rows_or_a_non_scalar_tensor_are_refused():
    a = td.RaggedTensor.from_row_lengths([1, 2, 3], [2, 1])
    with pytest.raises(td.errors.InvalidArgumentError, match="row partitions differ"):
        td.equal(a, td.RaggedTensor.from_row_lengths([1, 2, 3], [1, 2]))
    with pytest.raises(ValueError, match="only scalars"):
        td.add(a, td.constant([1, 2, 3]))
