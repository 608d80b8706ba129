"""Indexing and slicing (`Tensor.__getitem__`, td.strided_slice) against
NumPy's basic indexing."""

import numpy as np
import pytest

import treadle as td
try:  # tests/ops as a package, or as a plain directory on sys.path
    from .array_testing import ALL_DTYPES, check, sample
except ImportError:
    from array_testing import ALL_DTYPES, check, sample

KEYS = [
    0, 1, -1, -2,
    slice(None), slice(1, None), slice(None, -1), slice(None, None, -1), slice(None, None, 2),
    slice(-2, None, -1), slice(10, -10, -1), slice(-100, 100), slice(3, 1), slice(1, 3, -1),
    slice(0, 2, 5), slice(None, 0, -1), slice(-1, -3, -1),
    (), (0, 1), (0, -1, 2), (1, 2, 3, 4), (-1, -1, -1, -1),
    (Ellipsis,), (Ellipsis, 0), (0, Ellipsis), (Ellipsis, None), (None, Ellipsis), (None,),
    (None, 0, None, slice(1, 3), Ellipsis), (1, Ellipsis, slice(None, None, -2)),
    (slice(None), None, 1), (Ellipsis, 1, None), (slice(None, None, -1), Ellipsis, slice(1, None, 2)),
    (slice(None), slice(None), slice(None), slice(None)), (0, slice(None), 2, slice(None, None, -3)),
    (None, None, 0), (Ellipsis, None, None), (slice(1, 2), Ellipsis, 0, None),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy(key):
    x = np.arange(2 * 3 * 4 * 5, dtype=np.int64).reshape(2, 3, 4, 5)
    check(td.constant(x)[key], x[key], td.int64)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("key", [1, slice(None, None, -1), (Ellipsis, 0), (slice(1, None), None, slice(None, None, 2)),
                                 (0, 1), (slice(None), -1)], ids=repr)
def test_getitem_every_dtype(dtype, key):
    x = sample((3, 4), dtype)
    check(td.constant(x)[key], x[key], dtype)


def test_getitem_of_a_scalar():
    t = td.constant(5.0)
    check(t[...], np.float32(5.0))
    check(t[None], np.array([5.0], np.float32))
    check(t[()], np.float32(5.0))


def test_getitem_with_tensor_indices():
    x = np.arange(24).reshape(4, 6)
    t = td.constant(x)
    check(t[td.constant(1)], x[1])
    check(t[td.constant(-1, td.int64), 2], x[-1, 2])
    check(t[1:td.constant(3)], x[1:3])
    check(t[:, td.constant(1):td.constant(5):td.constant(2)], x[:, 1:5:2])
    check(t[np.int64(2)], x[2])
    check(t[[1, 2]], x[1, 2])  # a list key is a tuple of indices, as in TensorFlow


def test_getitem_large_python_ints_clamp_like_numpy():
    x = np.arange(10)
    t = td.constant(x)
    check(t[2**40:], x[2**40:])
    check(t[-2**40:3], x[-2**40:3])
    check(t[::2**35], x[::2**35])


def test_getitem_aliases_when_nothing_is_cut():
    t = td.constant(sample((3, 4), td.float32))
    assert t[:]._same_buffer(t)
    assert t[..., None]._same_buffer(t)


def test_getitem_strided_copy_of_a_large_tensor():
    x = sample((40, 50, 6), td.float32)
    t = td.constant(x)
    check(t[::3, 5:45:2, ::-1], x[::3, 5:45:2, ::-1])
    check(t[:, ::-1, 2], x[:, ::-1, 2])


def test_getitem_out_of_range_index_is_invalid_argument():
    t = td.constant([1, 2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="slice index 5 of dimension 0 out of bounds"):
        t[5]
    with pytest.raises(td.errors.InvalidArgumentError, match="slice index -4 of dimension 0 out of bounds"):
        t[-4]
    m = td.zeros([2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="slice index 3 of dimension 1 out of bounds"):
        m[0, 3]
    with pytest.raises(td.errors.InvalidArgumentError, match="slice index 0 of dimension 0 out of bounds"):
        td.zeros([0])[0]


def test_getitem_spec_errors():
    t = td.zeros([2, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="index out of range using input dim 2"):
        t[0, 0, 0]
    with pytest.raises(td.errors.InvalidArgumentError, match="multiple ellipses"):
        t[..., ...]
    with pytest.raises(td.errors.InvalidArgumentError, match=r"strides\[0\] must be non-zero"):
        t[::0]
    with pytest.raises(td.errors.InvalidArgumentError, match="index out of range using input dim 0"):
        td.constant(1.0)[0]


@pytest.mark.parametrize("key", [1.5, "a", td.constant(True), td.constant([0, 1]), td.constant(1.0), [[0]],
                                 slice(0.5, 2)], ids=repr)
def test_getitem_rejects_bad_index_types(key):
    with pytest.raises(TypeError, match="Only integers, slices"):
        td.zeros([3, 3])[key]


def test_strided_slice_with_masks():
    x = np.arange(60).reshape(3, 4, 5)
    t = td.constant(x)
    check(td.strided_slice(t, [0, 1], [2, 3]), x[0:2, 1:3])
    check(td.strided_slice(t, [0, 1], [2, 3], [1, -1]), x[0:2, 1:3:-1])
    check(td.strided_slice(t, [1, 0], [2, 0], begin_mask=0, end_mask=2), x[1:2, 0:])
    check(td.strided_slice(t, [1, 0], [2, 0], shrink_axis_mask=1, ellipsis_mask=2), x[1, ...])
    check(td.strided_slice(t, [1, 0, 0], [2, 0, 0], shrink_axis_mask=1, ellipsis_mask=2), x[1, ..., 0:0])
    check(td.strided_slice(t, [0, 2], [0, 3], new_axis_mask=1, shrink_axis_mask=2), x[None, 2])
    check(td.strided_slice(t, [-1], [0], [-1], end_mask=1), x[-1::-1])
    check(td.strided_slice(t, td.constant([0], td.int64), td.constant([1], td.int64)), x[0:1])


def test_strided_slice_spec_length_mismatch():
    t = td.zeros([3, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="begin, end, and strides to be 1D equal size"):
        td.strided_slice(t, [0, 0], [1], [1, 1])
    with pytest.raises(td.errors.InvalidArgumentError, match="only stride 1 allowed on non-range indexing"):
        td.strided_slice(t, [0], [1], [-1], shrink_axis_mask=1)


def test_symbolic_indices_are_packed_with_stack():
    # Symbolic (graph) scalar indices cannot become Python ints; they are
    # packed into the begin/end/strides vectors with Pack, widening to int64
    # when any index needs it.
    from treadle.ops import array_ops
    begin, end, strides = array_ops._pack_symbolic_indices(
        ([td.constant(1), 2], [td.constant(3, td.int64), 4], [1, td.constant(-1)]))
    check(begin, np.array([1, 2], np.int64), td.int64)
    check(end, np.array([3, 4], np.int64), td.int64)
    check(strides, np.array([1, -1], np.int64), td.int64)
    packed = array_ops._pack_symbolic_indices(([td.constant(1)], [td.constant(2)], [1]))
    assert [p.dtype for p in packed] == [td.int32] * 3
