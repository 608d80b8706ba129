"""td.keras.layers against NumPy computations of Keras's documented formulas,
eagerly, inside a td.function and inside a LoomOp, with gradients checked by
finite differences."""

import numpy as np
import pytest

import treadle as td

layers = td.keras.layers
RNG = np.random.default_rng(0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def x_of(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def test_dense_computes_activation_of_x_w_plus_b_eagerly_and_traced():
    dense = layers.Dense(3, activation="tanh")
    x = x_of(4, 5)
    got = dense(x).numpy()
    w, b = dense.kernel.numpy(), dense.bias.numpy()
    np.testing.assert_allclose(got, np.tanh(x @ w + b), rtol=1e-5, atol=1e-6)
    assert w.shape == (5, 3) and np.all(b == 0)
    limit = np.sqrt(6 / (5 + 3))  # glorot_uniform
    assert np.all(np.abs(w) <= limit)
    traced = td.function(lambda t: dense(t))
    np.testing.assert_allclose(traced(x).numpy(), got, rtol=1e-6)
    x3 = x_of(2, 4, 5)
    np.testing.assert_allclose(dense(x3).numpy(), np.tanh(x3 @ w + b), rtol=1e-5, atol=1e-6)
    assert len(dense.trainable_variables) == 2


def test_dense_built_first_inside_a_function():
    dense = layers.Dense(2, use_bias=False, kernel_initializer="ones")

    @td.function
    def f(x):
        return dense(x)

    np.testing.assert_allclose(f(np.ones((1, 3), np.float32)).numpy(), [[3.0, 3.0]])
    assert dense.bias is None and len(dense.variables) == 1


def test_dense_rejects_bad_units_and_activation():
    with pytest.raises(ValueError, match="units"):
        layers.Dense(0)
    with pytest.raises(ValueError, match="Unknown activation: 'nope'"):
        layers.Dense(2, activation="nope")


def test_embedding_gathers_rows():
    emb = layers.Embedding(10, 4)
    table = emb.embeddings.numpy()
    assert np.all(np.abs(table) <= 0.05)  # Keras's "uniform": RandomUniform(-0.05, 0.05)
    ids = np.array([[1, 2], [9, 0]])
    np.testing.assert_array_equal(emb(ids).numpy(), table[ids])


def test_dropout_only_in_training_and_scales_the_rest():
    drop = layers.Dropout(0.5, seed=1)
    x = np.ones((200, 50), np.float32)
    np.testing.assert_array_equal(drop(x).numpy(), x)
    y = drop(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6
    with pytest.raises(ValueError, match="rate"):
        layers.Dropout(1.0)


def test_layer_normalization_matches_the_formula():
    ln = layers.LayerNormalization(epsilon=1e-3)
    x = x_of(3, 6)
    ln(x)
    ln.gamma.assign(np.linspace(0.5, 1.5, 6).astype(np.float32))
    ln.beta.assign(np.linspace(-1, 1, 6).astype(np.float32))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-3) * ln.gamma.numpy() + ln.beta.numpy()
    np.testing.assert_allclose(ln(x).numpy(), want, rtol=1e-4, atol=1e-5)
    ln0 = layers.LayerNormalization(axis=0)
    x0 = x_of(4, 2)
    np.testing.assert_allclose(ln0(x0).numpy(), (x0 - x0.mean(0)) / np.sqrt(x0.var(0) + 1e-3), rtol=1e-4, atol=1e-5)


def lstm_reference(x, h, c, w, u, b):
    z = x @ w + h @ u + b
    i, f, g, o = np.split(z, 4, axis=-1)
    c2 = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c2), c2


def test_lstm_cell_matches_keras_gate_order():
    cell = layers.LSTMCell(4)
    x, h, c = x_of(3, 5), x_of(3, 4), x_of(3, 4)
    out, (h2, c2) = cell(x, [h, c])
    b = cell.bias.numpy()
    np.testing.assert_array_equal(b, np.r_[np.zeros(4), np.ones(4), np.zeros(8)])  # unit_forget_bias
    u = cell.recurrent_kernel.numpy()
    np.testing.assert_allclose(u @ u.T, np.eye(4), atol=1e-5)  # orthogonal: [4, 16] with orthonormal rows
    want_h, want_c = lstm_reference(x, h, c, cell.kernel.numpy(), u, b)
    np.testing.assert_allclose(h2.numpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c2.numpy(), want_c, rtol=1e-5, atol=1e-6)
    assert out is h2


def test_gru_cell_matches_keras_with_and_without_reset_after():
    for reset_after in (True, False):
        cell = layers.GRUCell(3, reset_after=reset_after, bias_initializer="random_normal")
        x, h = x_of(2, 4), x_of(2, 3)
        got, [state] = cell(x, [h])
        w, u, b = cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy()
        if reset_after:
            xz, xr, xn = np.split(x @ w + b[0], 3, axis=-1)
            hz, hr, hn = np.split(h @ u + b[1], 3, axis=-1)
            z, r = sigmoid(xz + hz), sigmoid(xr + hr)
            n = np.tanh(xn + r * hn)
        else:
            xz, xr, xn = np.split(x @ w + b, 3, axis=-1)
            z, r = sigmoid(xz + h @ u[:, :3]), sigmoid(xr + h @ u[:, 3:6])
            n = np.tanh(xn + (r * h) @ u[:, 6:])
        np.testing.assert_allclose(got.numpy(), z * h + (1 - z) * n, rtol=1e-5, atol=1e-6)
        assert state is got


def test_sequential_runs_layers_in_order_and_passes_training():
    model = layers.Sequential([layers.Dense(8, activation="relu"), layers.Dropout(0.5), layers.Dense(2)])
    x = x_of(4, 3)
    y = model(x).numpy()
    d1, d2 = model.layers[0], model.layers[2]
    want = np.maximum(x @ d1.kernel.numpy() + d1.bias.numpy(), 0) @ d2.kernel.numpy() + d2.bias.numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert len(model.trainable_variables) == 4 and len(model.submodules) == 3
    assert not np.allclose(model(np.ones((64, 3), np.float32), training=True).numpy(),
                           model(np.ones((64, 3), np.float32)).numpy())


def test_gradients_of_a_dense_layer_match_finite_differences():
    x = x_of(3, 4).astype(np.float64)
    dense = layers.Dense(2, activation="sigmoid", dtype=td.float64)
    dense(x)
    with td.GradientTape() as tape:
        loss = td.reduce_sum(dense(x) ** 2)
    grad = tape.gradient(loss, dense.kernel).numpy()
    w0 = dense.kernel.numpy()
    eps, numeric = 1e-6, np.zeros_like(w0)
    for idx in np.ndindex(w0.shape):
        for sign in (1, -1):
            w = w0.copy()
            w[idx] += sign * eps
            numeric[idx] += sign * np.sum(sigmoid(x @ w + dense.bias.numpy()) ** 2) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def test_layers_inside_a_loom_op_train():
    """A LoomOp whose instantiate_batch uses td.keras layers; the layers' variables get gradients."""
    hidden = td.loom.TypeShape(td.float32, (4,))
    combine = layers.Dense(4, activation="tanh", input_dim=8)
    norm = layers.LayerNormalization()
    norm.build((None, 4))

    class Node(td.loom.LoomOp):
        def __init__(self):
            super().__init__([hidden, hidden], [hidden])

        def instantiate_batch(self, inputs):
            return [norm(combine(td.concat(inputs, axis=1)))]

    loom = td.loom.Loom(named_ops={"node": Node()})
    weaver = loom.make_weaver()
    a, b = x_of(4), x_of(4)
    root = weaver.node(weaver.node(weaver(a), weaver(b)), weaver(b))
    weaver.add_output(root)
    with td.GradientTape() as tape:
        out = loom.output_tensor(hidden, weaver)
        loss = td.reduce_sum(out ** 2)
    grads = tape.gradient(loss, [combine.kernel, norm.gamma])
    assert all(g is not None for g in grads)

    def node(l, r):
        y = np.tanh(np.concatenate([l, r]) @ combine.kernel.numpy() + combine.bias.numpy())
        return (y - y.mean()) / np.sqrt(y.var() + 1e-3)
    np.testing.assert_allclose(out.numpy()[0], node(node(a, b), b), rtol=1e-4, atol=1e-5)
