"""td.loom.autobatch's planning loops in Cython (_plan.pyx), against the
NumPy formulas they replace: argument codes decoded (nodes with no
arguments included), the live values grouped by the type shape of the
output they are, the arguments that read the store, and values marked as
rows of the store."""

import numpy as np
import pytest

import treadle as td
from treadle.loom.autobatch._plan import decode_arguments, output_groups, store_read_positions
from treadle.loom.autobatch._record import store_rows
from treadle.loom.autobatch._record import Value
from treadle.loom.autobatch.values import STORED, row_code

RNG = np.random.default_rng(41)


def _random_round(nodes=40, groups=3):
    counts = RNG.integers(0, 4, nodes)  # arguments per node, some none
    splits = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    codes = []
    for _ in range(splits[-1]):
        kind = RNG.integers(0, 3)
        if kind == 0:
            codes.append((int(RNG.integers(0, nodes)) << 8) | int(RNG.integers(0, 3)))
        elif kind == 1:
            codes.append(row_code(int(RNG.integers(0, 100000))))
        else:
            codes.append(row_code(int(RNG.integers(0, 50)), int(RNG.integers(0, groups))))
    return np.array(codes, np.int64), splits


def _numpy_decode(codes, splits):
    arg_input = np.arange(len(codes)) - np.repeat(splits[:-1], np.diff(splits))
    is_row = codes < 0
    rows = -1 - codes
    value = np.where(is_row, rows >> 16, codes >> 8)
    output = np.where(is_row, 0, codes & 0xFF)
    group = np.where(is_row, (rows & 0xFFFF) - 1, -1)
    return arg_input, is_row.astype(np.int8), value, output, group


def test_decode_arguments_agrees_with_numpy_on_random_rounds():
    for _ in range(20):
        codes, splits = _random_round()
        got = decode_arguments(codes, splits)
        for a, b in zip(got, _numpy_decode(codes, splits)):
            np.testing.assert_array_equal(a, b)
        assert got[1].dtype == np.int8 and got[0].dtype == np.int64
        without = decode_arguments(codes, splits, with_groups=False)
        assert without[4] is None
        for a, b in zip(without[:4], got[:4]):
            np.testing.assert_array_equal(a, b)


def test_decode_arguments_rejects_splits_that_do_not_cover_the_arguments():
    with pytest.raises(ValueError, match="argument 2 of the round"):
        decode_arguments(np.array([0, 1, 2], np.int64), np.array([0, 2], np.int64))


def test_output_groups_agree_with_numpy_grouping_by_type_shape():
    type_shapes = ["a", "b", "c", "d"]
    table = RNG.integers(0, 3, (6, 3)).astype(np.int64)  # op, output -> type shape number ("d" unused)
    node_op = RNG.integers(0, 6, 30).astype(np.int64)
    for n in (0, 1, 5, 60):
        codes = np.array([(int(RNG.integers(0, 30)) << 8) | int(RNG.integers(0, 3)) for _ in range(n)], np.int64)
        nodes, outputs, groups = output_groups(codes, node_op, table, type_shapes)
        np.testing.assert_array_equal(nodes, codes >> 8)
        np.testing.assert_array_equal(outputs, codes & 0xFF)
        ids = table[node_op[codes >> 8], codes & 0xFF]
        expected = [(type_shapes[t], np.flatnonzero(ids == t).tolist()) for t in range(4) if np.any(ids == t)]
        assert [(ts, list(p)) for ts, p in groups] == expected


def test_output_groups_of_one_type_shape_are_a_range():
    table = np.zeros((2, 2), np.int64)
    codes = np.array([0 << 8, 1 << 8 | 1, 3 << 8], np.int64)
    _, _, groups = output_groups(codes, np.array([0, 1, 0, 1], np.int64), table, ["only"])
    assert groups == [("only", range(3))]


def test_store_read_positions_are_the_final_rows():
    for _ in range(10):
        codes, splits = _random_round()
        _, source, _, _, group = decode_arguments(codes, splits)
        final = np.flatnonzero((source == 1) & (group == -1))
        np.testing.assert_array_equal(store_read_positions(source, group), final)
        np.testing.assert_array_equal(store_read_positions(source, None), np.flatnonzero(source == 1))


def test_store_rows_gives_each_value_its_row_and_row_code():
    values = [Value(object(), 0, (STORED, "x", 0, row_code(0)), td.float32, ()) for _ in range(6)]
    store_rows(values, [1, 4, 5], "ts", 70000)
    store_rows(values, range(0, 1), "other", 3)
    assert [v.src for v in values[1::3]] == [(STORED, "ts", 70000, row_code(70000)),
                                             (STORED, "ts", 70001, row_code(70001))]
    assert values[5].src == (STORED, "ts", 70002, row_code(70002))
    assert values[0].src == (STORED, "other", 3, row_code(3))
    assert values[2].src == (STORED, "x", 0, row_code(0))  # not listed: unchanged


def test_the_loops_refuse_out_of_range_entries_instead_of_reading_past_arrays():
    table = np.zeros((2, 1), np.int64)
    with pytest.raises(ValueError, match="output 0 of node 5"):
        output_groups(np.array([5 << 8], np.int64), np.array([0, 1], np.int64), table, ["ts"])
    with pytest.raises(ValueError, match="output 3 of node 0"):
        output_groups(np.array([3], np.int64), np.array([0, 1], np.int64), table, ["ts"])
    with pytest.raises(ValueError, match="type shape number 1, of 1"):
        output_groups(np.array([0], np.int64), np.array([0], np.int64), np.ones((1, 1), np.int64), ["ts"])
    with pytest.raises(ValueError, match="2 groups for 3 arguments"):
        store_read_positions(np.ones(3, np.int8), np.zeros(2, np.int64))
    with pytest.raises(IndexError, match="position 2 of a live value, of 2"):
        store_rows([None, None], [2], "ts", 0)
