"""RaggedTensors with more than one ragged dimension (ragged_rank > 1), as
TensorFlow's: td.ragged.constant's ragged_rank and inner_shape rules, and
what a user does next (to_list, shape, indexing and slicing, iteration,
nested_row_splits, flat_values, to_tensor), eagerly and inside td.function."""

import numpy as np
import pytest

import treadle as td

ROWS = [[[1, 2], [3]], [], [[4, 5, 6]]]


def test_constant_of_a_list_nested_three_deep_has_two_ragged_dimensions():
    rt = td.ragged.constant(ROWS)
    assert isinstance(rt, td.RaggedTensor) and rt.ragged_rank == 2
    assert rt.to_list() == ROWS and rt.dtype == td.int32
    assert rt.shape.as_list() == [3, None, None]
    assert [s.numpy().tolist() for s in rt.nested_row_splits] == [[0, 2, 2, 3], [0, 2, 3, 6]]
    assert all(s.dtype == td.int64 for s in rt.nested_row_splits)
    np.testing.assert_array_equal(rt.flat_values.numpy(), [1, 2, 3, 4, 5, 6])
    assert isinstance(rt.values, td.RaggedTensor) and rt.values.to_list() == [[1, 2], [3], [4, 5, 6]]
    assert repr(rt) == f"<td.RaggedTensor {ROWS}>"


def test_ragged_rank_and_inner_shape_choose_which_dimensions_are_uniform():
    pylist = [[[1, 2], [3, 4]], [[5, 6]]]
    assert td.ragged.constant(pylist).shape.as_list() == [2, None, None]
    rt = td.ragged.constant(pylist, ragged_rank=1)
    assert rt.ragged_rank == 1 and rt.shape.as_list() == [2, None, 2] and rt.to_list() == pylist
    rt = td.ragged.constant(pylist, inner_shape=(2,))
    assert rt.ragged_rank == 1 and rt.shape.as_list() == [2, None, 2]
    deep = [[[[1, 2]], []], [[[3, 4], [5, 6]]]]
    rt = td.ragged.constant(deep, ragged_rank=2)
    assert rt.ragged_rank == 2 and rt.shape.as_list() == [2, None, None, 2] and rt.to_list() == deep
    assert td.ragged.constant(deep, inner_shape=(2,)).ragged_rank == 2
    assert td.ragged.constant(deep).ragged_rank == 3
    assert td.ragged.constant([[1, 2], [3, 4]], ragged_rank=0).shape.as_list() == [2, 2]


def test_lists_without_scalars_count_by_their_deepest_empty_list():
    rt = td.ragged.constant([[[]], []])
    assert rt.ragged_rank == 2 and rt.dtype == td.float32 and rt.to_list() == [[[]], []]
    assert td.ragged.constant([[[]], []], dtype=td.int64).dtype == td.int64
    rt = td.ragged.constant([[[]], []], ragged_rank=1)
    assert rt.ragged_rank == 1 and rt.shape.as_list() == [2, None, 0] and rt.to_list() == [[[]], []]


def test_inconsistent_nesting_is_refused_with_tensorflows_reasons():
    with pytest.raises(ValueError, match="all scalar values must have the same nesting depth"):
        td.ragged.constant([[[1, 2], 3]])
    with pytest.raises(ValueError, match="empty list nesting is greater than scalar value nesting"):
        td.ragged.constant([[1], [[]]])
    with pytest.raises(ValueError, match="max depth smaller than ragged_rank=3"):
        td.ragged.constant([[1, 2]], ragged_rank=3)
    with pytest.raises(ValueError, match=r"incompatible with ragged_rank=2 and dim\(inner_shape\)=1"):
        td.ragged.constant([[[1, 2]]], ragged_rank=2, inner_shape=(2,))
    with pytest.raises(ValueError, match="inner values have inconsistent shape"):
        td.ragged.constant([[[1, 2], [3]]], ragged_rank=1)
    with pytest.raises(ValueError, match="invalid ragged_rank=-1: must be nonnegative"):
        td.ragged.constant([[1]], ragged_rank=-1)


def test_rows_slices_and_iteration_eagerly():
    rt = td.ragged.constant(ROWS)
    assert isinstance(rt[0], td.RaggedTensor) and rt[0].to_list() == [[1, 2], [3]]
    assert rt[1].to_list() == [] and rt[-1].to_list() == [[4, 5, 6]]
    np.testing.assert_array_equal(rt[0][1].numpy(), [3])
    assert rt[td.constant(2)].to_list() == [[4, 5, 6]]
    assert rt[1:].to_list() == ROWS[1:] and rt[:-1].to_list() == ROWS[:-1]
    assert rt[-2:5].to_list() == ROWS[-2:5] and rt[2:1].to_list() == []
    assert [row.to_list() for row in rt] == ROWS
    with pytest.raises(IndexError, match="row 3 is out of range for 3 rows"):
        rt[3]
    assert rt[::2].to_list() == ROWS[::2] and rt[::-1].to_list() == ROWS[::-1]
    assert rt[2:0:-2].to_list() == ROWS[2:0:-2] and rt[5:7:2].to_list() == []
    assert td.ragged.constant([[1, 2], [], [3]])[::-1].to_list() == [[3], [], [1, 2]]


def test_a_stepped_slice_needs_the_number_of_rows():
    rt = td.ragged.constant(ROWS)

    def every_other(r):
        return r[::2]

    # A ragged argument's trace knows its number of rows (TensorFlow's spec keeps it) ...
    assert td.function(every_other)(rt).to_list() == ROWS[::2]
    # ... a signature that leaves it unknown does not.
    unknown_rows = td.function(every_other, input_signature=[td.RaggedTensorSpec([None, None, None], rt.dtype)])
    with pytest.raises(ValueError, match="step other than 1 only when the number of rows is known"):
        unknown_rows(rt)


def test_dense_and_numpy_forms():
    rt = td.ragged.constant(ROWS)
    np.testing.assert_array_equal(rt.to_tensor().numpy(), [[[1, 2, 0], [3, 0, 0]], [[0, 0, 0], [0, 0, 0]],
                                                           [[4, 5, 6], [0, 0, 0]]])
    assert rt.to_tensor(default_value=-1).numpy()[1].tolist() == [[-1, -1, -1], [-1, -1, -1]]
    rows = rt.numpy()
    assert rows.dtype == object and len(rows) == 3
    np.testing.assert_array_equal(rows[0][0], [1, 2])


def test_built_from_nested_row_splits_and_lengths():
    values = td.constant([1, 2, 3, 4, 5, 6])
    a = td.RaggedTensor.from_nested_row_splits(values, [[0, 2, 2, 3], [0, 2, 3, 6]])
    b = td.RaggedTensor.from_nested_row_lengths(values, [[2, 0, 1], [2, 1, 3]])
    assert a.to_list() == b.to_list() == ROWS
    with pytest.raises(ValueError, match="row_splits ends at 4 but there are 3 values"):
        td.RaggedTensor.from_nested_row_splits(values, [[0, 2, 4], [0, 2, 3, 6]])


def test_reductions_of_every_axis_as_tensorflows():
    rows = ROWS + [[[7], [], [8, 9]]]
    rt = td.ragged.constant(rows)
    assert td.reduce_sum(rt).numpy() == 45
    assert td.reduce_sum(rt, axis=2).to_list() == [[3, 3], [], [15], [7, 0, 17]]
    # Axis 1: each row's inner rows, position by position (TensorFlow 2.21's results).
    assert td.reduce_sum(rt, axis=1).to_list() == [[4, 2], [], [4, 5, 6], [15, 9]]
    assert td.reduce_sum(rt, axis=-2).to_list() == [[4, 2], [], [4, 5, 6], [15, 9]]
    assert td.reduce_max(rt, axis=1).to_list() == [[3, 2], [], [4, 5, 6], [8, 9]]
    floats = td.ragged.constant(rows, dtype=td.float32)
    assert td.reduce_mean(floats, axis=1).to_list() == [[2.0, 2.0], [], [4.0, 5.0, 6.0], [7.5, 9.0]]
    assert td.function(lambda r: td.reduce_sum(r, axis=1))(rt).to_list() == [[4, 2], [], [4, 5, 6], [15, 9]]
    with pytest.raises(NotImplementedError, match="axis 1 is reduced for ragged_rank 2"):
        td.reduce_sum(td.ragged.constant([[[[1]]]]), axis=1)


def _nested_sum(r):
    total = td.constant(0)
    for row in r:
        for inner in row:
            total += td.reduce_sum(inner)
    return total


def test_inside_td_function_one_trace_per_ragged_rank():
    f = td.function(_nested_sum)
    assert f(td.ragged.constant(ROWS)).numpy() == 21
    assert f(td.ragged.constant([[[7]], [[1, 1], []], []])).numpy() == 9  # as many rows: the same trace
    assert f.experimental_get_tracing_count() == 1
    assert f(td.ragged.constant([[1, 2], [3]])).numpy() == 6  # ragged_rank 1: its own trace
    assert f.experimental_get_tracing_count() == 2

    @td.function
    def parts(r, i):
        return r[i], r[1:], r.flat_values * 2, r.nested_row_splits[1]

    row, tail, doubled, inner_splits = parts(td.ragged.constant(ROWS), td.constant(0))
    assert row.to_list() == ROWS[0] and tail.to_list() == ROWS[1:]
    np.testing.assert_array_equal(doubled.numpy(), [2, 4, 6, 8, 10, 12])
    np.testing.assert_array_equal(inner_splits.numpy(), [0, 2, 3, 6])


def test_a_td_function_returns_and_rebuilds_a_nested_ragged_tensor():
    @td.function
    def plus_one(r):
        return r.with_flat_values(r.flat_values + 1)

    out = plus_one(td.ragged.constant(ROWS))
    assert out.ragged_rank == 2 and out.to_list() == [[[2, 3], [4]], [], [[5, 6, 7]]]


def _doubled_then_cut(r, n):
    for _ in td.range(n):
        r = r.with_flat_values(r.flat_values * 2)
    if n > 2:
        r = r[1:]
    else:
        r = r[:2]
    return r


def test_graph_loops_and_conds_carry_a_nested_ragged_tensor():
    f = td.function(_doubled_then_cut)
    rt = td.ragged.constant(ROWS)
    assert f(rt, td.constant(2)).to_list() == [[[4, 8], [12]], []]
    assert f(rt, td.constant(3)).to_list() == [[], [[32, 40, 48]]]
    assert f.experimental_get_tracing_count() == 1
