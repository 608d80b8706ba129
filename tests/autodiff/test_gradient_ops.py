"""The C++ ops the gradient rules use: values against NumPy, shape inference
with partial shapes, and every error case (a clear Python error naming the
op, never a crash)."""

import numpy as np
import pytest

import treadle as td

R = td.raw_ops
rng = np.random.default_rng(11)


def traced_shape(fn, *specs):
    """The static shape fn's result gets when traced on TensorSpecs."""
    concrete = td.function(fn).get_concrete_function(*specs)
    return concrete.outputs[0].shape


# ---------------------------------------------------------------- BroadcastGradientArgs

@pytest.mark.parametrize("s0,s1,r0,r1", [
    ([2, 3], [2, 3], [], []),
    ([2, 1, 3], [3], [], [0, 1]),
    ([], [4, 5], [0, 1], []),
    ([1, 5], [4, 1], [0], [1]),
    ([3, 1], [1], [], [0]),
])
def test_broadcast_gradient_args(s0, s1, r0, r1):
    for dtype in (td.int32, td.int64):
        a, b = R.BroadcastGradientArgs(s0=td.constant(s0, dtype), s1=td.constant(s1, dtype))
        assert a.dtype == dtype and b.dtype == dtype
        assert list(a.numpy()) == r0 and list(b.numpy()) == r1


def test_broadcast_gradient_args_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match="BroadcastGradientArgs.*Incompatible shapes"):
        R.BroadcastGradientArgs(s0=[2, 3], s1=[4])
    with pytest.raises(td.errors.InvalidArgumentError, match="negative dimension"):
        R.BroadcastGradientArgs(s0=[2, -1], s1=[2])
    with pytest.raises(ValueError, match="BroadcastGradientArgs.*s0"):
        traced_shape(lambda a, b: R.BroadcastGradientArgs(s0=a, s1=b)[0],
                     td.TensorSpec([2, 2], td.int32), td.TensorSpec([2], td.int32))


# ---------------------------------------------------------------- UnsortedSegmentSum

@pytest.mark.parametrize("dtype", [td.float32, td.float64, td.int32, td.int64])
def test_unsorted_segment_sum(dtype):
    data = rng.integers(-5, 5, size=(4, 2, 3)).astype(dtype.as_numpy_dtype)
    ids = np.array([[1, 0], [3, -1], [1, 1], [0, 3]], dtype=np.int64)
    out = td.math.unsorted_segment_sum(data, ids, 5)
    expected = np.zeros((5, 3), dtype=data.dtype)
    for idx in np.ndindex(ids.shape):
        if ids[idx] >= 0:
            expected[ids[idx]] += data[idx]
    assert out.dtype == dtype and out.shape == (5, 3)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_unsorted_segment_sum_errors_and_shapes():
    with pytest.raises(td.errors.InvalidArgumentError, match="UnsortedSegmentSum: segment_ids\\[1\\] = 4 is out of range"):
        td.math.unsorted_segment_sum(td.constant([1.0, 2.0]), [0, 4], 4)
    with pytest.raises(td.errors.InvalidArgumentError, match="UnsortedSegmentSum: segment_ids must be a prefix"):
        td.math.unsorted_segment_sum(td.constant([[1.0, 2.0]]), [0, 1], 4)
    with pytest.raises(ValueError, match="UnsortedSegmentSum: segment_ids must be a prefix"):
        traced_shape(lambda d, i: td.math.unsorted_segment_sum(d, i, 4), td.TensorSpec([1, 2]),
                     td.TensorSpec([2], td.int32))
    with pytest.raises(td.errors.InvalidArgumentError, match="num_segments must be >= 0"):
        td.math.unsorted_segment_sum(td.constant([1.0]), [0], -1)
    assert traced_shape(lambda d, i: td.math.unsorted_segment_sum(d, i, 7),
                        td.TensorSpec([None, 3]), td.TensorSpec([None], td.int32)).as_list() == [7, 3]
    assert traced_shape(lambda d, i, n: td.math.unsorted_segment_sum(d, i, n),
                        td.TensorSpec([None, 3]), td.TensorSpec([None], td.int32),
                        td.TensorSpec([], td.int32)).as_list() == [None, 3]


# ---------------------------------------------------------------- BroadcastTo

def test_broadcast_to_values_and_dtypes():
    for value in (np.arange(3, dtype=np.int64), np.array([True, False, True]), np.array([b"a", b"b", b"c"], object)):
        out = td.broadcast_to(td.constant(value), [2, 3])
        np.testing.assert_array_equal(out.numpy(), np.broadcast_to(value, (2, 3)))
    x = rng.normal(size=(3, 1, 2)).astype(np.float32)
    np.testing.assert_array_equal(td.broadcast_to(x, [4, 3, 5, 2]).numpy(), np.broadcast_to(x, (4, 3, 5, 2)))
    assert td.broadcast_to(td.constant(1.0), [0, 3]).shape == (0, 3)


def test_broadcast_to_errors_and_shapes():
    with pytest.raises(td.errors.InvalidArgumentError,
                       match="BroadcastTo: cannot broadcast a tensor of shape \\(3,\\) to shape \\(2, 4\\)"):
        td.broadcast_to(td.constant([1, 2, 3]), [2, 4])
    with pytest.raises(ValueError, match="BroadcastTo: cannot broadcast"):
        traced_shape(lambda x: td.broadcast_to(x, [2, 4]), td.TensorSpec([3]))
    with pytest.raises(td.errors.InvalidArgumentError, match="lower rank"):
        td.broadcast_to(td.constant([[1, 2]]), [2])
    with pytest.raises(td.errors.InvalidArgumentError, match="negative dimension"):
        td.broadcast_to(td.constant(1), [-1])
    assert traced_shape(lambda x, s: td.broadcast_to(x, s), td.TensorSpec([None]),
                        td.TensorSpec([3], td.int32)).as_list() == [None, None, None]


# ---------------------------------------------------------------- ReluGrad, InvertPermutation

def test_relu_grad():
    g = rng.normal(size=(3, 4)).astype(np.float32)
    f = rng.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(R.ReluGrad(gradients=g, features=f).numpy(), np.where(f > 0, g, 0))
    gi = np.array([1, 2, 3], np.int32)
    np.testing.assert_array_equal(R.ReluGrad(gradients=gi, features=np.array([-1, 0, 5], np.int32)).numpy(),
                                  [0, 0, 3])
    with pytest.raises(td.errors.InvalidArgumentError, match="ReluGrad: gradients and features must have the same"):
        R.ReluGrad(gradients=g, features=f[:, :2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_grads(dtype):
    y = rng.uniform(-1, 1, size=(5, 7)).astype(dtype)
    dy = rng.normal(size=(5, 7)).astype(dtype)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(R.SigmoidGrad(y=y, dy=dy).numpy(), dy * y * (1 - y), rtol=tol, atol=tol)
    np.testing.assert_allclose(R.TanhGrad(y=y, dy=dy).numpy(), dy * (1 - y * y), rtol=tol, atol=tol)
    # The activations' gradients are these ops, equal to the derivative of the activation.
    x = td.constant(rng.normal(size=(4, 3)))
    with td.GradientTape(persistent=True) as tape:
        tape.watch(x)
        s, t = td.sigmoid(x), td.tanh(x)
    sv, tv = s.numpy(), t.numpy()
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), sv * (1 - sv), rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(t, x).numpy(), 1 - tv * tv, rtol=1e-14)
    with pytest.raises(td.errors.InvalidArgumentError, match="SigmoidGrad: y and dy must have the same shape"):
        R.SigmoidGrad(y=y, dy=dy[:, :3])
    with pytest.raises(td.errors.InvalidArgumentError, match="int32 is not in the list of allowed values"):
        R.TanhGrad(y=np.ones(3, np.int32), dy=np.ones(3, np.int32))


def test_invert_permutation():
    p = rng.permutation(7).astype(np.int32)
    np.testing.assert_array_equal(td.math.invert_permutation(p).numpy(), np.argsort(p))
    with pytest.raises(td.errors.InvalidArgumentError, match="InvertPermutation: 2 is duplicated"):
        td.math.invert_permutation([2, 0, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match="not in \\[0, 3\\)"):
        td.math.invert_permutation([3, 0, 1])
    with pytest.raises(td.errors.InvalidArgumentError, match="InvertPermutation: 'x' must be a vector"):
        td.math.invert_permutation([[0]])


# ---------------------------------------------------------------- StridedSliceGrad

@pytest.mark.parametrize("key", [np.s_[1:, ::2], np.s_[::-1, 2], np.s_[..., None, 1:3], np.s_[-1]])
def test_strided_slice_grad_is_the_transpose_of_the_slice(key):
    x = rng.normal(size=(4, 5)).astype(np.float64)
    tx = td.constant(x)
    with td.GradientTape() as tape:
        tape.watch(tx)
        y = tx[key]
    dy = rng.normal(size=y.shape)
    g = tape.gradient(y, tx, output_gradients=td.constant(dy))
    expected = np.zeros_like(x)
    expected[key] = dy  # a basic slice picks each element at most once
    np.testing.assert_allclose(g.numpy(), expected)


def test_strided_slice_grad_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match="StridedSliceGrad: dy has shape \\[3\\] but the slice "
                                                              "has shape \\[2\\]"):
        R.StridedSliceGrad(shape=[4], begin=[0], end=[2], strides=[1], dy=td.constant([1.0, 2.0, 3.0]))
    with pytest.raises(td.errors.InvalidArgumentError, match="negative dimension"):
        R.StridedSliceGrad(shape=[-4], begin=[0], end=[2], strides=[1], dy=td.constant([1.0, 2.0]))
    with pytest.raises(td.errors.InvalidArgumentError, match="StridedSliceGrad.*out of bounds"):
        R.StridedSliceGrad(shape=[2], begin=[5], end=[6], strides=[1], dy=td.constant(1.0), shrink_axis_mask=1)
    with pytest.raises(td.errors.InvalidArgumentError, match="same length"):
        R.StridedSliceGrad(shape=[2], begin=[0, 0], end=[1], strides=[1], dy=td.constant([1.0]))


# ---------------------------------------------------------------- tensor lists

def test_tensor_list_add_n_and_zeros_like():
    a = R.TensorListFromTensor(tensor=td.constant([[1.0, 2.0], [3.0, 4.0]]), element_shape=[2],
                               element_dtype=td.float32)
    b = R.TensorListReserve(element_shape=[2], num_elements=3, element_dtype=td.float32)
    b = R.TensorListSetItem(input_handle=b, index=1, item=td.constant([10.0, 20.0]), element_dtype=td.float32)
    total = R.TensorListAddN(inputs=[a, b])
    assert int(R.TensorListLength(input_handle=total)) == 3
    stacked = R.TensorListStack(input_handle=total, element_shape=[2], element_dtype=td.float32)
    np.testing.assert_array_equal(stacked.numpy(), [[1, 2], [13, 24], [0, 0]])
    zeros = R.TensorListZerosLike(input_handle=a)
    assert int(R.TensorListLength(input_handle=zeros)) == 2
    np.testing.assert_array_equal(
        R.TensorListStack(input_handle=zeros, element_shape=[2], element_dtype=td.float32).numpy(), [[0, 0], [0, 0]])


def test_tensor_list_add_n_errors():
    a = R.TensorListFromTensor(tensor=td.constant([1.0, 2.0]), element_shape=[], element_dtype=td.float32)
    b = R.TensorListFromTensor(tensor=td.constant([1, 2]), element_shape=[], element_dtype=td.int32)
    c = R.TensorListFromTensor(tensor=td.constant([[1.0], [2.0]]), element_shape=[1], element_dtype=td.float32)
    with pytest.raises(td.errors.InvalidArgumentError, match="TensorListAddN: lists of float32 and int32"):
        R.TensorListAddN(inputs=[a, b])
    with pytest.raises(td.errors.InvalidArgumentError, match="TensorListAddN: items of shapes"):
        R.TensorListAddN(inputs=[a, c])
    with pytest.raises(td.errors.InvalidArgumentError, match="TensorListAddN"):
        R.TensorListAddN(inputs=[a, td.constant(1.0)])
    with pytest.raises(td.errors.InvalidArgumentError, match="TensorListZerosLike"):
        R.TensorListZerosLike(input_handle=td.constant(1.0))


def test_appends_share_storage_but_lists_stay_values():
    """Appending (what a While's gradient collects) shares the items' storage;
    every list still sees only its own items."""
    def stack(lst):
        return R.TensorListStack(input_handle=lst, element_shape=[], element_dtype=td.float32).numpy().tolist()

    def append(lst, value):
        n = int(R.TensorListLength(input_handle=lst))
        return R.TensorListSetItem(input_handle=lst, index=n, item=td.constant(value), element_dtype=td.float32,
                                   resize_if_index_out_of_bounds=True)

    empty = R.TensorListReserve(element_shape=-1, num_elements=0, element_dtype=td.float32)
    a = append(append(empty, 1.0), 2.0)
    b = append(a, 3.0)       # shares a's storage
    c = append(a, 30.0)      # a's storage already has a third item: c copies
    d = append(b, 4.0)
    e = R.TensorListSetItem(input_handle=b, index=0, item=td.constant(-1.0), element_dtype=td.float32)
    assert stack(a) == [1.0, 2.0]
    assert stack(b) == [1.0, 2.0, 3.0]
    assert stack(c) == [1.0, 2.0, 30.0]
    assert stack(d) == [1.0, 2.0, 3.0, 4.0]
    assert stack(e) == [-1.0, 2.0, 3.0]
    assert int(R.TensorListLength(input_handle=empty)) == 0

