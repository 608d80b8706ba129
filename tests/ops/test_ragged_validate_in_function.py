"""RaggedTensor(validate=True) inside a td.function: the checks the eager
constructors make become assertions that raise InvalidArgumentError when the
function runs (TensorFlow's behaviour), and valid inputs run as before."""

import numpy as np
import pytest

import treadle as td

VEC = td.TensorSpec([None], td.int64)
VALUES = td.TensorSpec([None], td.float32)


@td.function(input_signature=[VALUES, VEC])
def from_lengths(values, lengths):
    return td.RaggedTensor.from_row_lengths(values, lengths).row_splits


@td.function(input_signature=[VALUES, VEC])
def from_splits(values, splits):
    return td.RaggedTensor.from_row_splits(values, splits).row_splits


@td.function(input_signature=[VALUES, VEC, td.TensorSpec([], td.int64)])
def from_rowids(values, rowids, nrows):
    return td.RaggedTensor.from_value_rowids(values, rowids, nrows).row_splits


@td.function(input_signature=[VALUES, VEC])
def unchecked(values, lengths):
    return td.RaggedTensor.from_row_lengths(values, lengths, validate=False).row_splits


def _v(n):
    return td.constant(np.arange(n, dtype=np.float32))


def _i(x):
    return td.constant(np.array(x, np.int64))


def test_valid_inputs_run():
    np.testing.assert_array_equal(from_lengths(_v(3), _i([2, 0, 1])).numpy(), [0, 2, 2, 3])
    np.testing.assert_array_equal(from_splits(_v(3), _i([0, 1, 3])).numpy(), [0, 1, 3])
    np.testing.assert_array_equal(from_rowids(_v(3), _i([0, 0, 2]), _i(4)).numpy(), [0, 2, 2, 3, 3])
    np.testing.assert_array_equal(from_splits(_v(0), _i([0])).numpy(), [0])


@pytest.mark.parametrize("fn, args, message", [
    (from_lengths, (_v(1), _i([2, -1])), "row_lengths must be non-negative"),
    (from_lengths, (_v(4), _i([2, 1])), "row_splits must end at the number of values"),
    (from_splits, (_v(3), _i([1, 3])), "row_splits must start with 0"),
    (from_splits, (_v(3), _i([0, 3, 2, 3])), "row_splits must not decrease"),
    (from_splits, (_v(3), _i([])), "row_splits must have at least one entry"),
    (from_splits, (_v(3), _i([0, 2])), "row_splits must end at the number of values"),
    (from_rowids, (_v(3), _i([0, 2, 1]), _i(3)), "value_rowids must be sorted"),
    (from_rowids, (_v(2), _i([-1, 0]), _i(3)), "value_rowids must be non-negative"),
    (from_rowids, (_v(2), _i([0, 3]), _i(3)), "value_rowids must be less than nrows|nrows|segment"),
])
def test_invalid_inputs_raise_when_the_function_runs(fn, args, message):
    with pytest.raises(td.errors.InvalidArgumentError, match=message):
        fn(*args)


def test_validate_false_checks_nothing():
    np.testing.assert_array_equal(unchecked(_v(1), _i([2, -1])).numpy(), [0, 2, 1])


def test_eager_validation_is_unchanged():
    with pytest.raises(ValueError, match="row_lengths must be non-negative"):
        td.RaggedTensor.from_row_lengths(_v(1), _i([2, -1]))
