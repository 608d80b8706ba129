"""td.ragged.constant (TensorFlow's ragged-rank rules), rows by index and
iteration over a RaggedTensor's rows, eagerly and as a staged loop inside
td.function."""

import numpy as np
import pytest

import treadle as td


def test_constant_builds_rows_with_tensorflows_dtypes_and_shapes():
    rt = td.ragged.constant([[1, 2], [], [3]])
    assert isinstance(rt, td.RaggedTensor)
    assert rt.to_list() == [[1, 2], [], [3]]
    assert rt.dtype == td.int32 and rt.row_splits.dtype == td.int64
    assert rt.shape.as_list() == [3, None]
    assert td.ragged.constant([[1.5], [2.5, 3.5]]).dtype == td.float32
    assert td.ragged.constant([[1], [2]], dtype=td.float64).dtype == td.float64
    assert td.ragged.constant([[1]], row_splits_dtype=td.int32).row_splits.dtype == td.int32


def test_constant_without_scalars_is_float32_and_a_flat_list_is_a_tensor():
    empty = td.ragged.constant([[]])
    assert empty.to_list() == [[]] and empty.dtype == td.float32 and empty.shape.as_list() == [1, None]
    assert td.ragged.constant([[], []], dtype=td.int32).dtype == td.int32
    flat = td.ragged.constant([1, 2, 3])
    assert not isinstance(flat, td.RaggedTensor)
    np.testing.assert_array_equal(flat.numpy(), [1, 2, 3])


def test_uniform_inner_dimensions_with_ragged_rank_1():
    rt = td.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1)
    assert rt.shape.as_list() == [2, None, 2]
    np.testing.assert_array_equal(rt.values.numpy(), [[1, 2], [3, 4], [5, 6]])
    rt = td.ragged.constant([[[1, 2]], []], inner_shape=(2,))
    assert rt.shape.as_list() == [2, None, 2]


def test_bad_nesting_is_refused_with_tensorflows_reasons():
    with pytest.raises(ValueError, match="same nesting depth"):
        td.ragged.constant([[1, [2]], [3]])
    with pytest.raises(ValueError, match="same nesting depth"):
        td.ragged.constant([[1], 5], ragged_rank=1)
    with pytest.raises(ValueError, match="pylist has scalar values depth 1, but ragged_rank=1 requires scalar "
                                         "value depth greater than 1"):
        td.ragged.constant([5, 6], ragged_rank=1)


def test_rows_by_index_and_iteration_eagerly():
    rt = td.ragged.constant([[1, 2], [], [3]])
    np.testing.assert_array_equal(rt[0].numpy(), [1, 2])
    np.testing.assert_array_equal(rt[-1].numpy(), [3])
    assert rt[1].numpy().shape == (0,)
    np.testing.assert_array_equal(rt[td.constant(2)].numpy(), [3])
    assert [r.numpy().tolist() for r in rt] == [[1, 2], [], [3]]
    with pytest.raises(IndexError, match="row 3 is out of range for 3 rows"):
        rt[3]
    with pytest.raises(TypeError, match="an int, a slice or an integer scalar tensor"):
        rt[0.5]


def digits_per_row(m):
    out = td.TensorArray(td.int32, size=0, dynamic_size=True, element_shape=())
    for row in m:
        s = 0
        for v in row:
            s = s * 10 + v
        out = out.write(out.size(), s)
    return out.stack()


@pytest.mark.parametrize("rows", [[[]], [[], [1]], [[], [1], [1, 2]], [[4, 5, 6], [7]]])
def test_for_loop_over_rows_matches_eager_inside_td_function(rows):
    rt = td.ragged.constant(rows, dtype=td.int32)
    expected = [int("".join(map(str, r)) or 0) for r in rows]
    np.testing.assert_array_equal(digits_per_row(rt).numpy(), expected)
    f = td.function(digits_per_row)
    np.testing.assert_array_equal(f(rt).numpy(), expected)
    # A ragged argument is a graph input: other rows, same trace.
    np.testing.assert_array_equal(f(td.ragged.constant([[9], [8, 7]], dtype=td.int32)).numpy(), [9, 87])


def test_rows_by_tensor_index_inside_td_function():
    @td.function
    def row_sum(rt, i):
        return td.reduce_sum(rt[i])

    rt = td.ragged.constant([[1.0, 2.0], [], [3.0, 4.0, 5.0]])
    assert [row_sum(rt, td.constant(i)).numpy() for i in range(3)] == [3.0, 0.0, 12.0]


def test_ragged_tensors_cross_td_function_returns_conds_and_loops():
    rt = td.ragged.constant([[1.0, 2.0], [3.0]])

    @td.function
    def doubled(r):
        return r.with_values(r.values * 2.0)

    out = doubled(rt)
    assert isinstance(out, td.RaggedTensor) and out.to_list() == [[2.0, 4.0], [6.0]]

    @td.function
    def maybe_shift(r, c):
        if c > 0:
            r = r.with_values(r.values + 1.0)
        return r

    assert maybe_shift(rt, td.constant(1)).to_list() == [[2.0, 3.0], [4.0]]
    assert maybe_shift(rt, td.constant(0)).to_list() == [[1.0, 2.0], [3.0]]

    @td.function
    def grow(r, n):
        i = 0
        while i < n:  # each iteration adds a row: the row count is not a loop invariant
            r = td.RaggedTensor.from_row_splits(td.concat([r.values, [9.0]], 0),
                                                td.concat([r.row_splits, r.row_splits[-1:] + 1], 0))
            i += 1
        return r

    assert grow(rt, td.constant(2)).to_list() == [[1.0, 2.0], [3.0], [9.0], [9.0]]
