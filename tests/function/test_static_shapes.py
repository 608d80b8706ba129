"""Static shapes from shape tensors computed in a graph, as TensorFlow's shape
functions give them: the graph builder partially evaluates Shape, Pack,
StridedSlice, ConcatV2, Unpack, Identity, Cast and constants, and Fill,
Reshape, BroadcastTo and the random ops read what is known of their shape
operand. Eager results (whose shapes are always known) are the reference."""

import numpy as np
import pytest

import treadle as td


def _static_shape(fn, *specs):
    """The static shape of fn's output when traced for `specs`."""
    return td.function(fn, autograph=False).get_concrete_function(*specs).structured_outputs.shape


def _agrees_with_eager(fn, *values):
    """fn run eagerly and as a td.function give the same values."""
    np.testing.assert_array_equal(fn(*values).numpy(), td.function(fn, autograph=False)(*values).numpy())


def ones_of_rows_by_five(x):
    return td.ones(td.stack([td.shape(x)[0], 5]))


def test_ones_of_a_stacked_shape():
    assert _static_shape(ones_of_rows_by_five, td.TensorSpec([3, 4], td.float32)) == (3, 5)
    assert _static_shape(ones_of_rows_by_five, td.TensorSpec([None, 4], td.float32)).as_list() == [None, 5]
    assert _static_shape(ones_of_rows_by_five, td.TensorSpec(None, td.float32)).as_list() == [None, 5]
    _agrees_with_eager(ones_of_rows_by_five, td.zeros([3, 4]))


def reshape_to_rows_of_three(x):
    return td.reshape(td.zeros(td.shape(x)), [-1, 3])


def test_reshape_of_a_computed_shape_through_a_signature():
    f = td.function(reshape_to_rows_of_three, input_signature=[td.TensorSpec([10, 10, 3], td.float32)])
    assert f.get_concrete_function().structured_outputs.shape == (100, 3)
    assert _static_shape(lambda: td.reshape(td.zeros([10, 10, 3]), [-1, 3])) == (100, 3)
    _agrees_with_eager(reshape_to_rows_of_three, td.ones([10, 10, 3]))


def test_reshape_to_a_partly_known_shape():
    def flatten_rows(x):
        return td.reshape(x, td.stack([td.shape(x)[0], -1]))

    assert _static_shape(flatten_rows, td.TensorSpec([4, 2, 3], td.float32)) == (4, 6)
    assert _static_shape(flatten_rows, td.TensorSpec([None, 2, 3], td.float32)).as_list() == [None, None]
    _agrees_with_eager(flatten_rows, td.ones([4, 2, 3]))


def test_concat_and_slices_of_shapes():
    def swap_last_two(x):
        s = td.shape(x)
        return td.zeros(td.concat([s[:-2], s[-1:], s[-2:-1]], 0))

    assert _static_shape(swap_last_two, td.TensorSpec([2, 3, 4], td.float32)) == (2, 4, 3)
    assert _static_shape(swap_last_two, td.TensorSpec([None, 3, 4], td.float32)).as_list() == [None, 4, 3]
    _agrees_with_eager(swap_last_two, td.ones([2, 3, 4]))


def test_unstacked_shape_and_cast():
    def square_of_first(x):
        rows, _ = td.unstack(td.shape(x))
        n = td.cast(rows, td.int64)
        return td.fill(td.stack([n, n]), 1.0)

    assert _static_shape(square_of_first, td.TensorSpec([3, 7], td.float32)) == (3, 3)
    _agrees_with_eager(square_of_first, td.ones([3, 7]))


def test_broadcast_to_and_random_of_a_computed_shape():
    def broadcast(x, row):
        return td.broadcast_to(row, td.stack([td.shape(x)[0], td.shape(row)[0]]))

    assert _static_shape(broadcast, td.TensorSpec([5, 1], td.float32), td.TensorSpec([3], td.float32)) == (5, 3)
    _agrees_with_eager(broadcast, td.ones([5, 1]), td.constant([1.0, 2.0, 3.0]))
    shape = _static_shape(lambda x: td.random.uniform(td.shape(x)), td.TensorSpec([2, None], td.float32))
    assert shape.as_list() == [2, None]


def test_known_shapes_still_check_the_sizes():
    def bad(x):
        return td.reshape(x, td.stack([td.shape(x)[0], 5]))

    with pytest.raises((ValueError, td.errors.InvalidArgumentError)):
        td.function(bad, autograph=False)(td.ones([3, 4]))
