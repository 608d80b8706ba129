"""td.nn: softmax, log_softmax, l2_loss and the softmax cross-entropies against
NumPy references computed in float64."""

import numpy as np
import pytest

import treadle as td
from ._helpers import FLOAT_DTYPES, assert_tensor, make_array, seeded_rng


def np_log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True) if x.size else 0
    shifted = x - m
    with np.errstate(divide="ignore"):  # log(0) for an empty axis
        return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def np_softmax(x, axis=-1):
    return np.exp(np_log_softmax(x, axis))


def _rtol(dtype):
    return 2e-6 if dtype == td.float32 else 1e-13


SOFTMAX_CASES = [((5,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), 0),
                 ((2, 3, 4), -2), ((0, 3), None), ((3, 0), -1), ((1, 1), None), ((4, 1000), -1), ((1000, 4), 0)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,axis", SOFTMAX_CASES, ids=str)
def test_softmax_and_log_softmax_match_numpy(dtype, shape, axis):
    rng = seeded_rng("softmax", dtype.name, shape, axis)
    x = make_array(rng, shape, dtype, -10, 10)
    np_axis = -1 if axis is None else axis
    expected = np_softmax(x, np_axis).astype(x.dtype)
    expected_log = np_log_softmax(x, np_axis).astype(x.dtype)
    t = td.constant(x)
    assert_tensor(td.nn.softmax(t, axis=axis), expected, dtype, rtol=_rtol(dtype), atol=1e-7)
    assert_tensor(td.math.softmax(t, axis), expected, dtype, rtol=_rtol(dtype), atol=1e-7)
    assert_tensor(td.nn.log_softmax(t, axis=axis), expected_log, dtype, rtol=_rtol(dtype), atol=1e-6)
    assert_tensor(td.math.log_softmax(t, axis=axis), expected_log, dtype, rtol=_rtol(dtype), atol=1e-6)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_softmax_is_numerically_stable(dtype):
    x = td.constant([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0], [0.0, -np.inf, 0.0]], dtype=dtype)
    expected = np_softmax(np.array([[0.0, 1, 2], [0, -1, -2], [0, -np.inf, 0]]))
    out = td.nn.softmax(x)
    np.testing.assert_allclose(out.numpy(), expected, rtol=_rtol(dtype), atol=1e-7)
    assert np.all(np.isfinite(out.numpy()))
    log = td.nn.log_softmax(x).numpy()
    np.testing.assert_allclose(log[:2], np_log_softmax(np.array([[0.0, 1, 2], [0, -1, -2]])), rtol=1e-6)
    assert log[2, 1] == -np.inf
    np.testing.assert_allclose(td.reduce_sum(out, axis=1).numpy(), [1, 1, 1], rtol=1e-6)


def test_softmax_of_nan_row_is_nan():
    out = td.nn.softmax(td.constant([[np.nan, 1.0], [1.0, 1.0]])).numpy()
    assert np.isnan(out[0]).all()
    np.testing.assert_allclose(out[1], [0.5, 0.5])


def test_softmax_converts_python_values():
    assert_tensor(td.nn.softmax([1.0, 1.0]), np.array([0.5, 0.5], np.float32), td.float32)


def test_softmax_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match="Softmax"):
        td.nn.softmax(td.constant([1, 2]))
    with pytest.raises(td.errors.InvalidArgumentError, match="LogSoftmax"):
        td.nn.log_softmax(td.constant([1, 2]))
    with pytest.raises(td.errors.InvalidArgumentError, match="rank"):
        td.nn.softmax(td.constant(1.0))
    with pytest.raises(td.errors.InvalidArgumentError, match="axis 2 is out of range"):
        td.nn.softmax(td.constant([[1.0]]), axis=2)
    with pytest.raises(td.errors.InvalidArgumentError, match="axis -3"):
        td.nn.log_softmax(td.constant([[1.0]]), axis=-3)


# ---------------------------------------------------------------- l2_loss

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4), (0,), (100_003,)], ids=str)
def test_l2_loss_matches_numpy(dtype, shape):
    rng = seeded_rng("l2", dtype.name, shape)
    x = make_array(rng, shape, dtype)
    expected = np.array(np.sum(x.astype(np.float64) ** 2) / 2, x.dtype)
    assert_tensor(td.nn.l2_loss(td.constant(x)), expected, dtype, rtol=_rtol(dtype))


def test_l2_loss_errors():
    with pytest.raises(td.errors.InvalidArgumentError, match="L2Loss"):
        td.nn.l2_loss(td.constant([1, 2]))


# ---------------------------------------------------------------- cross-entropy

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("label_dtype", [td.int32, td.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("batch_shape,classes", [((4,), 5), ((1,), 1), ((0,), 3), ((2, 3), 4), ((), 6),
                                                 ((64,), 1000)], ids=str)
def test_sparse_cross_entropy_matches_numpy(dtype, label_dtype, batch_shape, classes):
    rng = seeded_rng("xent", dtype.name, label_dtype.name, batch_shape, classes)
    logits = make_array(rng, batch_shape + (classes,), dtype, -10, 10)
    labels = rng.integers(0, classes, size=batch_shape).astype(label_dtype.as_numpy_dtype)
    log_probs = np_log_softmax(logits)
    expected = -np.take_along_axis(log_probs, labels[..., None].astype(np.int64), axis=-1)[..., 0]
    loss = td.nn.sparse_softmax_cross_entropy_with_logits(labels=td.constant(labels), logits=td.constant(logits))
    assert_tensor(loss, expected.astype(logits.dtype), dtype, rtol=1e-5 if dtype == td.float32 else 1e-12,
                  atol=1e-6)
    # positional arguments work too
    assert_tensor(td.nn.sparse_softmax_cross_entropy_with_logits(labels, logits), expected.astype(logits.dtype),
                  dtype, rtol=1e-5 if dtype == td.float32 else 1e-12, atol=1e-6)


def test_sparse_cross_entropy_raw_op_returns_the_gradient():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((3, 4))
    labels = np.array([0, 3, 1])
    loss, backprop = td.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=td.constant(logits),
                                                                     labels=td.constant(labels))
    np.testing.assert_allclose(loss.numpy(), -np_log_softmax(logits)[np.arange(3), labels], rtol=1e-12)
    expected_grad = np_softmax(logits) - np.eye(4)[labels]
    np.testing.assert_allclose(backprop.numpy(), expected_grad, rtol=1e-12, atol=1e-15)


def test_sparse_cross_entropy_is_stable_for_large_logits():
    loss = td.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1], logits=[[1000.0, 0.0], [1000.0, 0.0]])
    np.testing.assert_allclose(loss.numpy(), [0.0, 1000.0], atol=1e-3)


@pytest.mark.parametrize("bad_label", [7, 5, -1])
def test_sparse_cross_entropy_label_out_of_range(bad_label):
    logits = td.constant(np.zeros((2, 5), np.float32))
    with pytest.raises(td.errors.InvalidArgumentError,
                       match=rf"Received a label value of {bad_label} which is outside the valid range of \[0, 5\)"):
        td.nn.sparse_softmax_cross_entropy_with_logits(labels=td.constant([1, bad_label]), logits=logits)


def test_sparse_cross_entropy_shape_and_dtype_errors():
    fn = td.nn.sparse_softmax_cross_entropy_with_logits
    logits = td.constant(np.zeros((2, 5), np.float32))
    with pytest.raises(td.errors.InvalidArgumentError, match="Rank mismatch"):
        fn(labels=td.constant([[1], [2]]), logits=logits)
    with pytest.raises(td.errors.InvalidArgumentError, match="Shape mismatch"):
        fn(labels=td.constant([1, 2, 3]), logits=logits)
    with pytest.raises(td.errors.InvalidArgumentError, match="scalars"):
        fn(labels=td.constant(1), logits=td.constant(1.0))
    with pytest.raises(td.errors.InvalidArgumentError, match="at least one class"):
        fn(labels=td.constant([0, 0]), logits=td.constant(np.zeros((2, 0), np.float32)))
    with pytest.raises(td.errors.InvalidArgumentError, match="SparseSoftmaxCrossEntropyWithLogits"):
        fn(labels=td.constant([1.0, 2.0]), logits=logits)
    with pytest.raises(td.errors.InvalidArgumentError, match="SparseSoftmaxCrossEntropyWithLogits"):
        fn(labels=td.constant([1, 2]), logits=td.constant(np.zeros((2, 5), np.int32)))
    with pytest.raises(ValueError, match="labels"):
        fn(logits=logits)
    with pytest.raises(ValueError, match="logits"):
        fn(labels=td.constant([1, 2]))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_dense_cross_entropy_matches_numpy(dtype):
    rng = seeded_rng("dense_xent", dtype.name)
    logits = make_array(rng, (4, 6), dtype, -5, 5)
    labels = rng.dirichlet(np.ones(6), size=4).astype(logits.dtype)
    expected = -np.sum(labels * np_log_softmax(logits), axis=-1)
    out = td.nn.softmax_cross_entropy_with_logits(labels=labels, logits=td.constant(logits))
    assert_tensor(out, expected.astype(logits.dtype), dtype, rtol=1e-5 if dtype == td.float32 else 1e-12)
    # one-hot labels agree with the sparse version
    sparse = td.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 5, 2, 2], logits=logits)
    dense = td.nn.softmax_cross_entropy_with_logits(labels=np.eye(6, dtype=logits.dtype)[[0, 5, 2, 2]],
                                                    logits=logits)
    np.testing.assert_allclose(dense.numpy(), sparse.numpy(), rtol=1e-5)
    # along another axis
    out0 = td.nn.softmax_cross_entropy_with_logits(labels=labels.T.copy(), logits=logits.T.copy(), axis=0)
    assert_tensor(out0, expected.astype(logits.dtype), dtype, rtol=1e-5 if dtype == td.float32 else 1e-12)


def test_relu_sigmoid_tanh_live_in_nn():
    x = td.constant([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(td.nn.relu(x).numpy(), [0.0, 0.0, 2.0])
    np.testing.assert_allclose(td.nn.sigmoid(x).numpy(), 1 / (1 + np.exp([1.0, 0.0, -2.0])), rtol=1e-6)
    np.testing.assert_allclose(td.nn.tanh(x).numpy(), np.tanh([-1.0, 0.0, 2.0]), rtol=1e-6)


# ---------------------------------------------------------------- shape inference (graph construction)

def test_nn_shapes_with_partial_information():
    from ._helpers import infer
    f, i = td.float32, td.int32
    assert infer("Softmax", [f], [None]) == ([f], [None])
    assert infer("LogSoftmax", [f], [[None, 3]], None, {"axis": 0}) == ([f], [(None, 3)])
    assert infer("L2Loss", [td.float64], [None]) == ([td.float64], [()])
    with pytest.raises(ValueError, match="out of range"):
        infer("Softmax", [f], [[None, 3]], None, {"axis": 2})
    xent = "SparseSoftmaxCrossEntropyWithLogits"
    assert infer(xent, [f, i], [[None, 5], [7]]) == ([f, f], [(7,), (7, 5)])
    assert infer(xent, [f, i], [None, [7]]) == ([f, f], [(7,), None])
    assert infer(xent, [f, i], [[None, 2, 5], None]) == ([f, f], [(None, 2), (None, 2, 5)])
    with pytest.raises(ValueError, match="Shape mismatch"):
        infer(xent, [f, i], [[3, 5], [7]])
    with pytest.raises(ValueError, match="Rank mismatch"):
        infer(xent, [f, i], [[3, 5], [3, 1]])
