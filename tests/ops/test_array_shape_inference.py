"""Shape inference of the array ops as graph construction sees it: partially
known shapes (None dims, unknown rank) and input values known only for
constants. Problems found here are ValueErrors, as in TensorFlow."""

import pytest

import treadle as td
try:  # tests/ops as a package, or as a plain directory on sys.path
    from .array_testing import const, infer
except ImportError:
    from array_testing import const, infer

F, I32, I64, B, S = td.float32, td.int32, td.int64, td.bool, td.string


def out_shape(*args, **kwargs):
    dtypes, shapes = infer(*args, **kwargs)
    assert len(shapes) == 1
    return shapes[0]


# ---------------------------------------------------------------- reshape and friends

def test_reshape_inference():
    assert out_shape("Reshape", [F, I32], [(None, 3), (2,)], [None, const([-1, 6])]) == (None, 6)
    assert out_shape("Reshape", [F, I32], [(2, 3), (2,)], [None, const([3, -1])]) == (3, 2)
    assert out_shape("Reshape", [F, I32], [(2, 3), (2,)], [None, None]) == (None, None)
    assert out_shape("Reshape", [F, I32], [None, (None,)], [None, None]) is None
    assert out_shape("Reshape", [S, I64], [None, (3,)], [None, const([1, 2, 3], I64)]) == (1, 2, 3)
    with pytest.raises(ValueError, match="Input to reshape is a tensor with 6 values, but the requested shape has 4"):
        infer("Reshape", [F, I32], [(2, 3), (1,)], [None, const([4])])
    with pytest.raises(ValueError, match="'shape' must be a vector"):
        infer("Reshape", [F, I32], [(2, 3), (1, 2)], [None, None])
    with pytest.raises(ValueError, match="only one input size may be -1"):
        infer("Reshape", [F, I32], [(None, 3), (2,)], [None, const([-1, -1])])


def test_expand_dims_and_squeeze_inference():
    assert out_shape("ExpandDims", [F, I32], [(None, 3), ()], [None, const(0)]) == (1, None, 3)
    assert out_shape("ExpandDims", [F, I32], [(None, 3), ()], [None, const(-1)]) == (None, 3, 1)
    assert out_shape("ExpandDims", [F, I32], [(None, 3), ()], [None, None]) == (None, None, None)
    assert out_shape("ExpandDims", [F, I32], [None, ()], [None, const(0)]) is None
    with pytest.raises(ValueError, match="expand dim index 3 for tensor with 2 dimensions"):
        infer("ExpandDims", [F, I32], [(None, 3), ()], [None, const(3)])
    assert out_shape("Squeeze", [F], [(1, None, 3)], attrs={"axis": []}) is None
    assert out_shape("Squeeze", [F], [(1, 2, 1)], attrs={"axis": []}) == (2,)
    assert out_shape("Squeeze", [F], [(1, None, 3)], attrs={"axis": [0]}) == (None, 3)
    assert out_shape("Squeeze", [F], [(1, None, 3)], attrs={"axis": [-2]}) == (1, 3)
    assert out_shape("Squeeze", [F], [None], attrs={"axis": [0]}) is None
    with pytest.raises(ValueError, match=r"can not squeeze dim\[2\], expected a dimension of 1, got 3"):
        infer("Squeeze", [F], [(1, None, 3)], attrs={"axis": [2]})


def test_identity_shape_size_rank_inference():
    assert infer("Identity", [S], [(None, 2)]) == ([S], [(None, 2)])
    assert infer("Shape", [F], [(None, 3)]) == ([I32], [(2,)])
    assert infer("Shape", [F], [None], attrs={"out_type": I64}) == ([I64], [(None,)])
    assert infer("Size", [F], [None]) == ([I32], [()])
    assert infer("Rank", [B], [None]) == ([I32], [()])
    with pytest.raises(TypeError, match="out_type must be int32 or int64"):
        infer("Shape", [F], [(1,)], attrs={"out_type": F})


def test_transpose_inference():
    assert out_shape("Transpose", [F, I32], [(None, 3, 4), (3,)], [None, const([2, 0, 1])]) == (4, None, 3)
    assert out_shape("Transpose", [F, I32], [(None, 3, 4), (3,)], [None, None]) == (None, None, None)
    assert out_shape("Transpose", [F, I32], [None, (3,)], [None, const([2, 0, 1])]) == (None, None, None)
    assert out_shape("Transpose", [F, I32], [None, (4,)], [None, None]) == (None, None, None, None)
    assert out_shape("Transpose", [F, I32], [None, (None,)], [None, None]) is None
    with pytest.raises(ValueError, match="transpose expects a vector of size 2"):
        infer("Transpose", [F, I32], [(2, 3), (3,)], [None, const([0, 1, 2])])
    with pytest.raises(ValueError, match="perm must have 2 elements"):
        infer("Transpose", [F, I32], [(2, 3), (3,)], [None, None])


# ---------------------------------------------------------------- joining and splitting

def test_concat_inference():
    shapes = [(2, None), (None, 3), ()]
    assert out_shape("ConcatV2", [F, F, I32], shapes, [None, None, const(0)]) == (None, 3)
    assert out_shape("ConcatV2", [F, F, I32], shapes, [None, None, const(1)]) == (2, None)
    assert out_shape("ConcatV2", [F, F, I32], shapes, [None, None, None]) == (None, None)
    assert out_shape("ConcatV2", [F, F, I32], [(2, 3), (4, 3), ()], [None, None, const(-2)]) == (6, 3)
    assert out_shape("ConcatV2", [F, F, I32], [(2, 3), None, ()], [None, None, const(0)]) == (None, 3)
    assert out_shape("ConcatV2", [F, F, I32], [None, None, ()], [None, None, const(0)]) is None
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
        infer("ConcatV2", [F, F, I32], [(2, 3), (None, 4), ()], [None, None, const(0)])
    with pytest.raises(ValueError, match="Ranks of all input tensors should match"):
        infer("ConcatV2", [F, F, I32], [(2, 3), (None,), ()], [None, None, None])
    with pytest.raises(ValueError, match=r"in the range \[-2, 2\), but got 2"):
        infer("ConcatV2", [F, F, I32], [(2, 3), (2, 3), ()], [None, None, const(2)])
    with pytest.raises(TypeError, match="does not match"):
        infer("ConcatV2", [F, I32, I32], [(2,), (2,), ()], [None, None, const(0)])


def test_pack_inference():
    assert out_shape("Pack", [F, F], [(None, 3), (2, None)], attrs={"axis": 0}) == (2, 2, 3)
    assert out_shape("Pack", [F, F, F], [(None, 3), None, (2, None)], attrs={"axis": -1}) == (2, 3, 3)
    assert out_shape("Pack", [F], [None], attrs={"axis": 0}) is None
    with pytest.raises(ValueError, match="shapes of all inputs must match"):
        infer("Pack", [F, F], [(None, 3), (2, 4)], attrs={"axis": 0})
    with pytest.raises(ValueError, match=r"`axis` = 3 not in range \[-3, 3\)"):
        infer("Pack", [F, F], [(None, 3), (2, 3)], attrs={"axis": 3})


def test_unpack_inference():
    dtypes, shapes = infer("Unpack", [F], [(None, 3)], attrs={"num": 4})
    assert dtypes == [F] * 4 and shapes == [(3,)] * 4
    assert infer("Unpack", [S], [(None, 3)], attrs={"num": 3, "axis": -1})[1] == [(None,)] * 3
    assert infer("Unpack", [F], [None], attrs={"num": 2})[1] == [None, None]
    with pytest.raises(ValueError, match="input shape axis 1 must equal 2"):
        infer("Unpack", [F], [(None, 3)], attrs={"num": 2, "axis": 1})
    with pytest.raises(ValueError, match=r"axis = 2 not in \[-2, 2\)"):
        infer("Unpack", [F], [(None, 3)], attrs={"num": 2, "axis": 2})


def test_split_inference():
    assert infer("Split", [I32, F], [(), (None, 6)], [const(1), None], {"num_split": 3})[1] == [(None, 2)] * 3
    assert infer("Split", [I32, F], [(), (None, 6)], [None, None], {"num_split": 2})[1] == [(None, None)] * 2
    assert infer("Split", [I32, F], [(), None], [const(0), None], {"num_split": 2})[1] == [None, None]
    with pytest.raises(ValueError, match="evenly divide the split dimension"):
        infer("Split", [I32, F], [(), (None, 6)], [const(1), None], {"num_split": 4})
    with pytest.raises(ValueError, match="num_split must be >= 1"):
        infer("Split", [I32, F], [(), (None, 6)], [const(1), None], {"num_split": 0})


def test_split_v_inference():
    args = "SplitV", [F, I32, I32], [(None, 6), (2,), ()]
    assert infer(*args, [None, const([1, -1]), const(1)], {"num_split": 2})[1] == [(None, 1), (None, 5)]
    assert infer(*args, [None, None, const(1)], {"num_split": 2})[1] == [(None, None)] * 2
    assert infer("SplitV", [F, I32, I32], [(4, None), (2,), ()], [None, const([2, -1]), const(-1)],
                 {"num_split": 2})[1] == [(4, 2), (4, None)]
    with pytest.raises(ValueError, match="Got: 7"):
        infer(*args, [None, const([3, 4]), const(1)], {"num_split": 2})
    with pytest.raises(ValueError, match="size_splits has 2 elements but num_split is 3"):
        infer(*args, [None, None, const(1)], {"num_split": 3})


# ---------------------------------------------------------------- gather, slicing, choosing

def test_gather_inference():
    args = [F, I32, I32], [(None, 5), (2, None), ()]
    assert out_shape("GatherV2", *args, [None, None, const(0)]) == (2, None, 5)
    assert out_shape("GatherV2", *args, [None, None, const(-1)]) == (None, 2, None)
    assert out_shape("GatherV2", *args, [None, None, None]) == (None, None, None)
    assert out_shape("GatherV2", [F, I32, I32], [(None, 4, 5), (3, 2), ()], [None, None, const(1)],
                     {"batch_dims": 1}) == (3, 2, 5)
    assert out_shape("GatherV2", [F, I32, I32], [None, (3,), ()], [None, None, const(0)]) is None
    with pytest.raises(ValueError, match=r"expected axis in the range \[-2, 2\), but got 2"):
        infer("GatherV2", *args, [None, None, const(2)])
    with pytest.raises(ValueError, match="should be equal to indices.shape"):
        infer("GatherV2", [F, I32, I32], [(4, 5), (3, 2), ()], [None, None, const(1)], {"batch_dims": 1})


def strided(shape, begin, end, strides, **masks):
    values = [None] + [const(v) if v is not None else None for v in (begin, end, strides)]
    n = len(begin) if begin is not None else None
    return out_shape("StridedSlice", [F, I32, I32, I32], [shape, (n,), (n,), (n,)], values, masks)


def test_strided_slice_inference():
    assert strided((None, 4, 5), [0, 1], [0, 3], [1, 1], begin_mask=1, end_mask=1) == (None, 2, 5)
    assert strided((None, 4, 5), [0, 1], [0, 3], [1, 1], shrink_axis_mask=1) == (2, 5)
    assert strided((6, 4), [0, 0], [0, 0], [1, 1], new_axis_mask=1, begin_mask=2, end_mask=2) == (1, 6, 4)
    assert strided((6, 4), [1], [2], [1], shrink_axis_mask=1) == (4,)
    assert strided((6, None), [0, 2], [0, 0], [1, 1], ellipsis_mask=1, shrink_axis_mask=2) == (6,)
    # Unknown values: the structure (new axes, shrinks, ellipsis) still gives the rank.
    values_unknown = out_shape("StridedSlice", [F, I32, I32, I32], [(3, 4, 5), (3,), (3,), (3,)],
                               [None, None, None, None], {"new_axis_mask": 1, "shrink_axis_mask": 4})
    assert values_unknown == (1, None, 5)
    assert out_shape("StridedSlice", [F, I32, I32, I32], [None, (2,), (2,), (2,)], [None] * 4) is None
    with pytest.raises(ValueError, match="slice index 6 of dimension 0 out of bounds"):
        strided((6, 4), [6], [7], [1], shrink_axis_mask=1)
    with pytest.raises(ValueError, match="begin, end, and strides to be 1D equal size"):
        out_shape("StridedSlice", [F, I32, I32, I32], [(3,), (2,), (1,), (2,)], [None] * 4)


def test_select_where_one_hot_tile_inference():
    assert out_shape("SelectV2", [B, F, F], [(None, 1), (3,), ()]) == (None, 3)
    assert out_shape("SelectV2", [B, S, S], [None, (3,), ()]) is None
    with pytest.raises(ValueError, match="Incompatible shapes"):
        infer("SelectV2", [B, F, F], [(2,), (3,), ()])
    assert infer("Where", [F], [(None, 3)]) == ([I64], [(None, 2)])
    assert infer("Where", [B], [None]) == ([I64], [(None, None)])
    assert out_shape("OneHot", [I32, I32, F, F], [(None, 2), (), (), ()], [None, const(4), None, None]) == (None, 2, 4)
    assert out_shape("OneHot", [I32, I32, F, F], [(None, 2), (), (), ()], [None, None, None, None],
                     {"axis": 0}) == (None, None, 2)
    with pytest.raises(ValueError, match="depth must be non-negative"):
        infer("OneHot", [I32, I32, F, F], [(2,), (), (), ()], [None, const(-3), None, None])
    assert out_shape("Tile", [F, I32], [(None, 3), (2,)], [None, const([2, 2])]) == (None, 6)
    assert out_shape("Tile", [F, I32], [(None, 3), (2,)], [None, const([0, 1])]) == (0, 3)
    assert out_shape("Tile", [F, I32], [(None, 3), (2,)], [None, None]) == (None, None)
    with pytest.raises(ValueError, match="vector of length 2 but got length 3"):
        infer("Tile", [F, I32], [(None, 3), (3,)], [None, None])


def test_generator_inference():
    assert out_shape("Fill", [I32, F], [(3,), ()], [None, None]) == (None, None, None)
    assert out_shape("Fill", [I32, S], [(2,), ()], [const([2, 3]), None]) == (2, 3)
    assert out_shape("Fill", [I32, F], [(None,), ()], [None, None]) is None
    with pytest.raises(ValueError, match="'value' must be a scalar"):
        infer("Fill", [I32, F], [(2,), (2,)], [None, None])
    assert out_shape("Range", [I32, I32, I32], [(), (), ()], [None, const(5), const(1)]) == (None,)
    assert out_shape("Range", [I64, I64, I64], [(), (), ()], [const(1, I64), const(10, I64), const(3, I64)]) == (3,)
    assert out_shape("Range", [F, F, F], [(), (), ()], [const(0.0, F), const(1.0, F), const(0.3, F)]) == (4,)
    with pytest.raises(ValueError, match="requires delta != 0"):
        infer("Range", [I32, I32, I32], [(), (), ()], [const(0), const(5), const(0)])
    assert infer("ZerosLike", [S], [(None, 2)]) == ([S], [(None, 2)])
    assert infer("OnesLike", [B], [None]) == ([B], [None])
