"""Joining and splitting: concat, stack (and auto-packing of lists of
tensors), unstack (and iteration), split, against NumPy."""

import numpy as np
import pytest

import treadle as td
try:  # tests/ops as a package, or as a plain directory on sys.path
    from .array_testing import ALL_DTYPES, check, sample
except ImportError:
    from array_testing import ALL_DTYPES, check, sample

# ---------------------------------------------------------------- concat


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concat_matches_numpy(dtype, axis):
    base = [2, 3, 4]
    parts = []
    for i, extra in enumerate([1, 2, 0, 3]):
        shape = list(base)
        shape[axis] = extra
        parts.append(sample(shape, dtype, seed=i))
    out = td.concat([td.constant(p) for p in parts], axis)
    check(out, np.concatenate(parts, axis), dtype)


def test_concat_single_input_and_tensor_axis():
    x = sample((2, 3), td.float32)
    t = td.constant(x)
    check(td.concat([t], 0), x)
    check(td.concat(t, 1), x)
    check(td.concat([t, t], td.constant(1, dtype=td.int64)), np.concatenate([x, x], 1))


def test_concat_empty_and_python_values():
    check(td.concat([td.zeros([0, 2]), td.ones([1, 2])], 0), np.ones((1, 2), np.float32))
    check(td.concat([td.zeros([2, 0]), td.zeros([2, 0])], 1), np.zeros((2, 0), np.float32))
    # Python values take the dtype of the tensor beside them.
    check(td.concat([td.constant([1.5], td.float64), [2, 3]], 0), np.array([1.5, 2, 3]), td.float64)
    check(td.concat([[1], [2, 3]], 0), np.array([1, 2, 3], np.int32), td.int32)


def test_concat_errors():
    a, b = td.zeros([2, 3]), td.zeros([2, 4])
    with pytest.raises(td.errors.InvalidArgumentError,
                       match=r"Dimension 1 in both shapes must be equal: shape\[0\] = \[2,3\] vs. shape\[1\] = \[2,4\]"):
        td.concat([a, b], 0)
    with pytest.raises(td.errors.InvalidArgumentError, match="Ranks of all input tensors should match"):
        td.concat([a, td.zeros([2])], 0)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"in the range \[-2, 2\), but got 2"):
        td.concat([a, a], 2)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"in the range \[-2, 2\), but got -3"):
        td.concat([a, a], -3)
    with pytest.raises(td.errors.InvalidArgumentError, match="can't concatenate scalars"):
        td.concat([td.constant(1), td.constant(2)], 0)
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="int32 that does not match type float32"):
        td.concat([a, td.zeros([2, 3], td.int32)], 0)
    with pytest.raises(ValueError, match="at least one tensor"):
        td.concat([], 0)
    with pytest.raises(td.errors.InvalidArgumentError, match="'axis' must be a scalar"):
        td.concat([a, a], [0, 1])


# ---------------------------------------------------------------- stack


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack_matches_numpy(dtype, axis):
    parts = [sample((2, 3), dtype, seed=i) for i in range(4)]
    out = td.stack([td.constant(p) for p in parts], axis)
    check(out, np.stack(parts, axis), dtype)


def test_stack_scalars_empty_and_python_values():
    check(td.stack([td.constant(1), td.constant(2), 3]), np.array([1, 2, 3], np.int32))
    check(td.stack([td.zeros([0, 2])] * 3, axis=1), np.zeros((0, 3, 2), np.float32))
    check(td.stack([td.constant(1.5, td.float64), 2]), np.array([1.5, 2.0]), td.float64)
    check(td.stack([[1, 2], [3, 4]], axis=1), np.array([[1, 3], [2, 4]], np.int32))


def test_convert_to_tensor_packs_lists_of_tensors():
    a = td.constant([1.0, 2.0])
    check(td.convert_to_tensor([a, a * 2]), np.array([[1, 2], [2, 4]], np.float32))
    check(td.convert_to_tensor([[td.constant(1), 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
    check(td.constant([td.constant(1.0), 2.0]), np.array([1, 2], np.float32))


def test_stack_errors():
    a = td.zeros([2, 3])
    with pytest.raises(td.errors.InvalidArgumentError,
                       match=r"shapes of all inputs must match: values\[0\].shape = \(2, 3\) != values\[1\].shape = \(3, 2\)"):
        td.stack([a, td.zeros([3, 2])])
    with pytest.raises(ValueError, match=r"Argument `axis` = 3 not in range \[-3, 3\)"):
        td.stack([a, a], axis=3)
    with pytest.raises(ValueError, match=r"Argument `axis` = -4 not in range \[-3, 3\)"):
        td.stack([a, a], axis=-4)
    with pytest.raises((TypeError, td.errors.InvalidArgumentError), match="does not match"):
        td.stack([a, td.zeros([2, 3], td.float64)])
    with pytest.raises(ValueError, match="at least one tensor"):
        td.stack([])


# ---------------------------------------------------------------- unstack


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_unstack_matches_numpy(dtype, axis):
    x = sample((2, 3, 4), dtype)
    parts = td.unstack(td.constant(x), axis=axis)
    expected = [np.take(x, i, axis=axis) for i in range(x.shape[axis])]
    assert isinstance(parts, list) and len(parts) == len(expected)
    for p, e in zip(parts, expected):
        check(p, e, dtype)


def test_unstack_num_and_empty():
    x = sample((3, 2), td.int32)
    assert len(td.unstack(x, num=3)) == 3
    assert td.unstack(td.zeros([0, 4])) == []
    parts = td.unstack(td.zeros([2, 0]))
    assert len(parts) == 2 and tuple(parts[0].shape) == (0,)


def test_iterating_a_tensor_unstacks_it():
    x = sample((3, 2), td.float64)
    rows = list(td.constant(x))
    assert len(rows) == 3
    for r, e in zip(rows, x):
        check(r, e)
    a, b = td.constant([5, 6])
    assert int(a) == 5 and int(b) == 6
    with pytest.raises(TypeError, match="scalar"):
        iter(td.constant(1))


def test_unstack_errors():
    x = td.zeros([2, 3])
    with pytest.raises(ValueError, match=r"Argument `axis` = 2 not in range \[-2, 2\)"):
        td.unstack(x, axis=2)
    with pytest.raises(ValueError, match=r"Argument `axis` = 0 not in range \[0, 0\)"):
        td.unstack(td.constant(1.0))
    with pytest.raises(td.errors.InvalidArgumentError, match="input shape axis 0 must equal 3"):
        td.unstack(x, num=3)


# ---------------------------------------------------------------- split


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_split_into_equal_pieces(dtype, axis):
    x = sample((4, 6, 2), dtype)
    for num in (1, 2):
        parts = td.split(td.constant(x), num, axis=axis)
        expected = np.split(x, num, axis=axis)
        assert len(parts) == num
        for p, e in zip(parts, expected):
            check(p, e, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("sizes,axis", [([1, 2, 3], 1), ([3, -1], 1), ([-1], 0), ([0, 4, 0], 0), ([2, 0], -1)])
def test_split_into_given_sizes(dtype, sizes, axis):
    x = sample((4, 6, 2), dtype)
    parts = td.split(td.constant(x), sizes, axis=axis)
    dim = x.shape[axis]
    resolved = [dim - sum(s for s in sizes if s != -1) if s == -1 else s for s in sizes]
    expected = np.split(x, np.cumsum(resolved)[:-1], axis=axis)
    assert len(parts) == len(sizes)
    for p, e in zip(parts, expected):
        check(p, e, dtype)


def test_split_sizes_as_tensor_and_num():
    x = sample((5, 2), td.float32)
    parts = td.split(x, td.constant([2, 3], dtype=td.int64), axis=0)
    check(parts[0], x[:2])
    check(parts[1], x[2:])
    parts = td.split(x, np.array([4, 1]), num=2)
    check(parts[1], x[4:])


def test_split_errors():
    x = td.zeros([5, 4])
    with pytest.raises(td.errors.InvalidArgumentError,
                       match=r"evenly divide the split dimension, but got split_dim 0 \(size = 5\) and num_split 2"):
        td.split(x, 2)
    with pytest.raises(td.errors.InvalidArgumentError, match="num_split must be >= 1"):
        td.split(x, 0)
    with pytest.raises(td.errors.InvalidArgumentError, match="Determined shape must either match input shape".lower()):
        td.split(x, [2, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match="Got: 6"):
        td.split(x, [6, -1])
    with pytest.raises(td.errors.InvalidArgumentError, match="only one dimension of size_splits can have a value of -1"):
        td.split(x, [-1, -1, 5])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"size_splits\[0\] = -3 must be >= 0"):
        td.split(x, [-3, 8])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"axis = 2 not in \[-2, 2\)"):
        td.split(x, 1, axis=2)
    with pytest.raises(ValueError, match="Rank-0 tensors are not supported"):
        td.split(x, td.constant(2))
    with pytest.raises(td.errors.InvalidArgumentError, match="size_splits has 2 elements but num_split is 3"):
        td.split(x, [2, 3], num=3)
