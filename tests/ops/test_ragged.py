"""td.RaggedTensor, the segment ops and td.repeat against NumPy (rows as
Python lists), with empty rows, eagerly and inside td.function; gradients by
finite differences."""

import numpy as np
import pytest

import treadle as td
from autodiff.gradcheck import GradCheck

ROWS = [[1.0, 2.0, 3.0], [], [4.0], [], [5.0, -6.0]]


def splits_of(rows):
    return np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)


def flat(rows, inner=()):
    return np.array([v for r in rows for v in r], dtype=np.float64).reshape((-1,) + inner)


def test_constructors_agree_and_give_tensorflows_views():
    values = flat(ROWS)
    splits = splits_of(ROWS)
    lengths = np.diff(splits)
    rowids = np.repeat(np.arange(len(ROWS)), lengths)
    made = [td.RaggedTensor.from_row_splits(values, splits),
            td.RaggedTensor.from_row_lengths(values, lengths),
            td.RaggedTensor.from_value_rowids(values, rowids, nrows=len(ROWS))]
    for rt in made:
        assert rt.to_list() == ROWS
        np.testing.assert_array_equal(rt.row_splits.numpy(), splits)
        np.testing.assert_array_equal(rt.row_lengths().numpy(), lengths)
        np.testing.assert_array_equal(rt.value_rowids().numpy(), rowids)
        assert int(rt.nrows()) == 5
        np.testing.assert_array_equal(rt.values.numpy(), values)
        assert rt.shape.as_list() == [5, None]
        assert rt.dtype == td.float64
    # nrows defaults to the last row id + 1 (trailing empty rows need it given).
    assert td.RaggedTensor.from_value_rowids(values, rowids).to_list() == ROWS[:5]
    assert td.RaggedTensor.from_value_rowids(values, rowids, nrows=7).to_list() == ROWS + [[], []]


def test_all_rows_empty_and_no_rows():
    rt = td.RaggedTensor.from_row_splits(np.zeros((0, 2)), [0, 0, 0])
    assert rt.to_list() == [[], []]
    np.testing.assert_array_equal(td.reduce_sum(rt, axis=1).numpy(), np.zeros((2, 2)))
    none = td.RaggedTensor.from_row_splits(np.zeros((0,)), [0])
    assert none.to_list() == [] and int(none.nrows()) == 0
    assert td.reduce_max(none, axis=1).numpy().shape == (0,)


def test_bad_splits_are_refused():
    with pytest.raises(ValueError, match="start with 0"):
        td.RaggedTensor.from_row_splits([1.0, 2.0], [1, 2])
    with pytest.raises(ValueError, match="must not decrease"):
        td.RaggedTensor.from_row_splits([1.0, 2.0], [0, 2, 1, 2])
    with pytest.raises(ValueError, match="2 values"):
        td.RaggedTensor.from_row_splits([1.0, 2.0], [0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        td.RaggedTensor.from_row_lengths([1.0, 2.0], [3, -1])
    with pytest.raises(ValueError, match="sorted"):
        td.RaggedTensor.from_value_rowids([1.0, 2.0], [1, 0])
    with pytest.raises(ValueError, match="from_row_splits"):
        td.RaggedTensor([1.0], [0, 1])


def _np_rows(rows, inner):
    rng = np.random.default_rng(3)
    return [[rng.normal(size=inner) for _ in r] for r in rows]


@pytest.mark.parametrize("inner", [(), (3,)])
def test_row_reductions_match_numpy(inner):
    rows = _np_rows(ROWS, inner)
    rt = td.RaggedTensor.from_row_splits(flat(rows, inner), splits_of(rows))
    zero = np.zeros(inner)
    np.testing.assert_allclose(td.reduce_sum(rt, axis=1).numpy(), [np.sum(r, axis=0) + zero for r in rows])
    lowest = np.finfo(np.float64).min  # an empty row's max, as in TensorFlow
    np.testing.assert_allclose(td.reduce_max(rt, axis=1).numpy(),
                               [np.max(r, axis=0) if r else zero + lowest for r in rows])
    with np.errstate(invalid="ignore"):
        expected_mean = [np.mean(r, axis=0) if r else zero + np.nan for r in rows]  # 0 / 0, as TensorFlow
    np.testing.assert_allclose(td.reduce_mean(rt, axis=1).numpy(), expected_mean)
    np.testing.assert_allclose(td.reduce_sum(rt).numpy(), sum(np.sum(r) for r in rows))
    if inner:
        inside = td.reduce_sum(rt, axis=2)  # inside the values: still ragged
        assert inside.to_list() == [[float(np.sum(v)) for v in r] for r in rows]
    with pytest.raises(ValueError, match="axis 1"):
        td.reduce_sum(rt, axis=0)


def test_to_tensor_pads_rows():
    rt = td.RaggedTensor.from_row_splits(flat(ROWS), splits_of(ROWS))
    dense = rt.to_tensor(default_value=-1.0).numpy()
    expected = np.full((5, 3), -1.0)
    for i, r in enumerate(ROWS):
        expected[i, :len(r)] = r
    np.testing.assert_array_equal(dense, expected)


def test_ragged_inside_a_function():
    @td.function
    def row_stats(values, splits):
        rt = td.RaggedTensor.from_row_splits(values, splits)
        return td.reduce_sum(rt, axis=1), td.reduce_max(rt, axis=1), rt.value_rowids(), rt.row_lengths()

    s, m, ids, lengths = row_stats(td.constant(flat(ROWS)), td.constant(splits_of(ROWS)))
    np.testing.assert_allclose(s.numpy(), [sum(r) for r in ROWS])
    np.testing.assert_allclose(m.numpy()[[0, 2, 4]], [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(ids.numpy(), [0, 0, 0, 2, 4, 4])
    np.testing.assert_array_equal(lengths.numpy(), [3, 0, 1, 0, 2])
    # Other row structures reuse the trace: nothing about them is static.
    other = [[1.0], [2.0, 3.0, 4.0, 5.0]]
    s, _, _, _ = row_stats(td.constant(flat(other)), td.constant(splits_of(other)))
    np.testing.assert_allclose(s.numpy(), [1.0, 14.0])


@pytest.mark.parametrize("in_function", [False, True])
@pytest.mark.parametrize("reduce", ["reduce_sum", "reduce_mean", "reduce_max"])
def test_row_reduction_gradients_match_finite_differences(reduce, in_function):
    rows = [[0.3, -1.2, 2.0], [1.0], [], [-0.5, 0.7]]
    splits = splits_of(rows)
    keep = [0, 1, 3] if reduce == "reduce_mean" else [0, 1, 2, 3]  # an empty row's mean is nan

    def fn(values):
        rt = td.RaggedTensor.from_row_splits(values, td.constant(splits))
        out = getattr(td, reduce)(rt, axis=1)
        return td.gather(out, keep) if reduce != "reduce_max" else td.gather(out, [0, 1, 3])

    GradCheck(fn, [flat(rows, ())]).check_first(in_function=in_function)


def test_child_sum_through_repeat_and_segment_sum_gradients():
    """h_j summed over children, each child gated by a function of its parent:
    the child-sum TreeLSTM's pattern (repeat parent rows, segment-sum children)."""
    splits = splits_of([[1, 2], [], [3, 4, 5]])

    def fn(parents, children):
        rt = td.RaggedTensor.from_row_splits(children, td.constant(splits))
        gate = td.sigmoid(td.repeat(parents, rt.row_lengths(), axis=0))
        return td.math.unsorted_segment_sum(gate * rt.values, rt.value_rowids(), rt.nrows())

    rng = np.random.default_rng(0)
    GradCheck(fn, [rng.normal(size=(3, 2)), rng.normal(size=(5, 2))]).check_first()
    GradCheck(fn, [rng.normal(size=(3, 2)), rng.normal(size=(5, 2))]).check_first(in_function=True)


def test_segment_ops_match_numpy():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(6, 2))
    ids = np.array([0, 0, 1, 3, 3, 3])
    expected = np.zeros((4, 2))
    np.add.at(expected, ids, data)
    np.testing.assert_allclose(td.math.segment_sum(data, ids).numpy(), expected)
    unsorted = np.array([2, -1, 0, 2, 4, 0])
    total = np.zeros((5, 2))
    count = np.zeros(5)
    big = np.full((5, 2), np.finfo(np.float64).min)
    for r, s in enumerate(unsorted):
        if s >= 0:
            total[s] += data[r]
            count[s] += 1
            big[s] = np.maximum(big[s], data[r])
    np.testing.assert_allclose(td.math.unsorted_segment_sum(data, unsorted, 5).numpy(), total)
    np.testing.assert_allclose(td.math.unsorted_segment_max(data, unsorted, 5).numpy(), big)
    np.testing.assert_allclose(td.math.unsorted_segment_mean(data, unsorted, 5).numpy(),
                               total / np.maximum(count, 1)[:, None])
    ints = td.math.unsorted_segment_max(np.array([3, 7, 1], dtype=np.int32), [1, 1, 0], 3).numpy()
    np.testing.assert_array_equal(ints, [1, 7, np.iinfo(np.int32).min])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_segment_reductions_of_sorted_and_unsorted_ids_match_numpy(dtype):
    # Sorted ids (a ragged tensor's row ids) take the kernels' one-pass path;
    # the same rows shuffled take the general one. Negative ids first, empty
    # segments in the middle and at the end, rows wider than a SIMD vector.
    rng = np.random.default_rng(2)
    ids = np.array([-1, -1, 0, 0, 0, 2, 3, 3, 6, 6, 6, 6, 6], dtype=np.int64)
    data = (rng.normal(size=(len(ids), 37)) * 100).astype(dtype)
    num = 9
    total = np.zeros((num, 37), dtype)
    big = np.full((num, 37), np.finfo(dtype).min if dtype != np.int32 else np.iinfo(dtype).min, dtype)
    for r, s in enumerate(ids):  # row by row, in order, in the data's own dtype
        if s >= 0:
            total[s] = total[s] + data[r]
            big[s] = np.maximum(big[s], data[r])
    for order in (np.arange(len(ids)), rng.permutation(len(ids))):
        got_sum = td.math.unsorted_segment_sum(data[order], ids[order], num).numpy()
        got_max = td.math.unsorted_segment_max(data[order], ids[order], num).numpy()
        if order[0] == 0:  # the same order of additions: the same bits
            np.testing.assert_array_equal(got_sum, total)
        else:
            np.testing.assert_allclose(got_sum, total, rtol=1e-5)
        np.testing.assert_array_equal(got_max, big)
    rt = td.RaggedTensor.from_value_rowids(data[2:], ids[2:], nrows=num)
    np.testing.assert_allclose(td.reduce_sum(rt, axis=1).numpy(), total, rtol=1e-5)


def test_ragged_row_sum_op_checks_its_splits():
    # td.reduce_sum(rt, axis=1) runs RaggedRowSum on (values, row_splits); the
    # kernel checks the splits itself, as a graph or schedule may feed any.
    values = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    got = td.raw_ops.RaggedRowSum(values=values, row_splits=np.array([0, 0, 3, 3, 4], np.int64)).numpy()
    np.testing.assert_array_equal(got, [[0, 0], [6, 9], [0, 0], [6, 7]])
    for splits, message in (([1, 4], "must be 0"), ([0, 3, 2, 4], "non-decreasing"), ([0, 5], "values has 4 rows"),
                            ([0, 2, 6], "values has 4 rows"), ([], "at least one")):
        with pytest.raises(td.errors.InvalidArgumentError, match=message):
            td.raw_ops.RaggedRowSum(values=values, row_splits=np.array(splits, np.int64))
    assert td.raw_ops.RaggedRowSum(values=np.zeros((0, 3), np.float32),
                                   row_splits=np.array([0], np.int32)).shape == (0, 3)


def test_segment_ops_refuse_bad_ids():
    with pytest.raises(td.errors.InvalidArgumentError, match="sorted"):
        td.math.segment_sum([1.0, 2.0, 3.0], [0, 2, 1])
    with pytest.raises(td.errors.InvalidArgumentError, match="out of range"):
        td.math.unsorted_segment_max([1.0, 2.0], [0, 5], 3)
    with pytest.raises((td.errors.InvalidArgumentError, ValueError), match="prefix"):
        td.math.unsorted_segment_sum(np.ones((3, 2)), [0, 1], 2)


def test_repeat_matches_numpy():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(td.repeat(x, [2, 0, 1], axis=1).numpy(), np.repeat(x, [2, 0, 1], axis=1))
    np.testing.assert_array_equal(td.repeat(x, 2, axis=0).numpy(), np.repeat(x, 2, axis=0))
    np.testing.assert_array_equal(td.repeat(x, 3).numpy(), np.repeat(x, 3))
    np.testing.assert_array_equal(td.repeat(np.array(["a", "b"]), [1, 2]).numpy(), [b"a", b"b", b"b"])
    with pytest.raises((td.errors.InvalidArgumentError, ValueError), match="negative"):
        td.repeat(x, [1, -1], axis=0)
    with pytest.raises((td.errors.InvalidArgumentError, ValueError), match="entries"):
        td.repeat(x, [1, 2], axis=1)


def test_cumsum_matches_numpy():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    np.testing.assert_array_equal(td.math.cumsum(x, axis=1).numpy(), np.cumsum(x, axis=1))
    np.testing.assert_array_equal(td.math.cumsum(x, axis=0, exclusive=True).numpy(), [[0, 0, 0], [1, 2, 3]])
    np.testing.assert_array_equal(td.math.cumsum(x, axis=1, reverse=True).numpy(),
                                  np.cumsum(x[:, ::-1], axis=1)[:, ::-1])
