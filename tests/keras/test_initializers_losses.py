"""td.keras.initializers and td.keras.losses against Keras's documented
definitions: the initializers' bounds, variances and orthogonality; the
losses' values computed by hand in NumPy."""

import numpy as np
import pytest

import treadle as td

init = td.keras.initializers
losses = td.keras.losses


def test_constant_initializers():
    np.testing.assert_array_equal(init.Zeros()((2, 3)).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(init.Ones()((2,), td.float64).numpy(), np.ones(2))
    assert init.Ones()((2,), td.float64).dtype == td.float64
    np.testing.assert_array_equal(init.Constant(0.5)((3,)).numpy(), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(init.Identity(2.0)((2, 2)).numpy(), 2 * np.eye(2))


@pytest.mark.parametrize("cls, limit", [(init.GlorotUniform, np.sqrt(6 / (200 + 300))),
                                        (init.HeUniform, np.sqrt(6 / 200)), (init.LecunUniform, np.sqrt(3 / 200))])
def test_uniform_variance_scaling(cls, limit):
    values = cls(seed=1)((200, 300)).numpy()
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.98 * limit
    np.testing.assert_allclose(values.var(), limit ** 2 / 3, rtol=0.03)


@pytest.mark.parametrize("cls, stddev", [(init.GlorotNormal, np.sqrt(2 / (200 + 300))), (init.HeNormal, np.sqrt(2 / 200)),
                                         (init.LecunNormal, np.sqrt(1 / 200))])
def test_truncated_normal_variance_scaling_keeps_the_variance(cls, stddev):
    values = cls(seed=2)((200, 300)).numpy()
    # Keras divides by the truncated unit normal's standard deviation, so the draws keep the variance.
    np.testing.assert_allclose(values.std(), stddev, rtol=0.03)
    assert np.abs(values).max() <= 2 * stddev / 0.87962566103423978 + 1e-7


def test_random_initializers_and_seeds():
    a = init.RandomNormal(1.0, 0.5, seed=3)((20000,)).numpy()
    np.testing.assert_allclose([a.mean(), a.std()], [1.0, 0.5], rtol=0.03)
    np.testing.assert_array_equal(a, init.RandomNormal(1.0, 0.5, seed=3)((20000,)).numpy())  # a seed repeats
    u = init.RandomUniform(-1, 3, seed=4)((20000,)).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.05
    t = init.TruncatedNormal(0.0, 2.0, seed=5)((20000,)).numpy()
    assert np.abs(t).max() <= 4.0 and t.std() < 2.0
    assert not np.array_equal(init.RandomNormal()((5,)).numpy(), init.RandomNormal()((5,)).numpy())


def test_orthogonal():
    q = init.Orthogonal(gain=2.0, seed=6)((6, 4)).numpy()
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(4), atol=1e-5)
    wide = init.Orthogonal(seed=6)((3, 5)).numpy()
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="at least two"):
        init.Orthogonal()((3,))


def test_get_by_name():
    assert isinstance(init.get("glorot_uniform"), init.GlorotUniform)
    assert isinstance(init.get("HeNormal"), init.HeNormal)
    with pytest.raises(ValueError, match="Unknown initializer: 'bogus'"):
        init.get("bogus")


Y_BIN = np.array([[0.0, 1.0], [1.0, 1.0]], np.float32)
P_BIN = np.array([[0.1, 0.8], [0.6, 1.0]], np.float32)


def test_binary_crossentropy():
    p = np.clip(P_BIN, 1e-7, 1 - 1e-7)
    per = -(Y_BIN * np.log(p) + (1 - Y_BIN) * np.log(1 - p)).mean(-1)
    np.testing.assert_allclose(losses.binary_crossentropy(Y_BIN, P_BIN).numpy(), per, rtol=1e-5)
    np.testing.assert_allclose(float(losses.BinaryCrossentropy()(Y_BIN, P_BIN)), per.mean(), rtol=1e-5)
    logits = np.array([[-1.0, 2.0], [0.5, 3.0]], np.float32)
    q = 1 / (1 + np.exp(-logits))
    want = -(Y_BIN * np.log(q) + (1 - Y_BIN) * np.log(1 - q)).mean(-1)
    np.testing.assert_allclose(losses.binary_crossentropy(Y_BIN, logits, from_logits=True).numpy(), want, rtol=1e-5)
    smooth = Y_BIN * 0.8 + 0.1
    want = -(smooth * np.log(p) + (1 - smooth) * np.log(1 - p)).mean(-1)
    np.testing.assert_allclose(losses.BinaryCrossentropy(label_smoothing=0.2, reduction="none")(Y_BIN, P_BIN).numpy(),
                               want, rtol=1e-5)


def test_categorical_and_sparse_crossentropy():
    y = np.array([[0, 1, 0], [0, 0, 1]], np.float32)
    p = np.array([[0.05, 0.95, 0], [0.1, 0.8, 0.1]], np.float32)
    want = -(y * np.log(np.clip(p / p.sum(-1, keepdims=True), 1e-7, 1 - 1e-7))).sum(-1)
    np.testing.assert_allclose(losses.categorical_crossentropy(y, p).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(float(losses.CategoricalCrossentropy()(y, p)), want.mean(), rtol=1e-5)  # Keras: 1.177
    np.testing.assert_allclose(float(losses.SparseCategoricalCrossentropy()([1, 2], p)), want.mean(), rtol=1e-5)
    logits = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], np.float32)
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -(y * log_softmax).sum(-1)
    np.testing.assert_allclose(losses.categorical_crossentropy(y, logits, from_logits=True).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(losses.sparse_categorical_crossentropy(np.array([[1], [2]]), logits,
                                                                      from_logits=True).numpy(), want, rtol=1e-5)
    weighted = losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")([1, 2], logits, [1.0, 0.5])
    np.testing.assert_allclose(float(weighted), want[0] + 0.5 * want[1], rtol=1e-5)
    smooth = y * 0.7 + 0.1
    np.testing.assert_allclose(losses.categorical_crossentropy(y, logits, from_logits=True, label_smoothing=0.3).numpy(),
                               -(smooth * log_softmax).sum(-1), rtol=1e-5)


def test_mean_squared_error_and_keras_documented_example():
    # Keras's documentation: y_true [[0, 1], [0, 0]], y_pred [[1, 1], [1, 0]] gives 0.5.
    assert float(losses.MeanSquaredError()([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]])) == 0.5
    np.testing.assert_allclose(losses.mse([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]]).numpy(), [0.5, 0.5])
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="mean")


def test_losses_inside_a_function_and_their_gradient():
    w = td.Variable(np.array([[0.5], [-0.5]], np.float32))
    bce = losses.BinaryCrossentropy(from_logits=True)

    @td.function
    def step(x, y):
        with td.GradientTape() as tape:
            loss = bce(y, x @ w)
        return loss, tape.gradient(loss, w)

    x = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    y = np.array([[1.0], [0.0]], np.float32)
    loss, grad = step(x, y)
    z = x @ w.numpy()
    np.testing.assert_allclose(float(loss), np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-abs(z)))), rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), x.T @ (1 / (1 + np.exp(-z)) - y) / 2, rtol=1e-5)
