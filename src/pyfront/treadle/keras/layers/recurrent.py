"""LSTMCell and GRUCell: one step of a recurrent network, with Keras's
weights and gate order, for loops written by hand, in a td.function, or as
the cell of a LoomOp."""

from treadle.framework.tensor import convert_to_tensor
from treadle.keras import initializers
from treadle.keras.layers.base import Layer, activation
from treadle.ops import array_ops, math_ops


class _Cell(Layer):
    def __init__(self, units, activation_name, recurrent_activation, use_bias, kernel_initializer,
                 recurrent_initializer, bias_initializer, name, dtype):
        super().__init__(name=name, dtype=dtype)
        if not isinstance(units, int) or units < 1:
            raise ValueError(f"{type(self).__name__}: units must be a positive int, got {units!r}")
        self.units, self.use_bias = units, bool(use_bias)
        self.activation = activation(activation_name)
        self.recurrent_activation = activation(recurrent_activation)
        self.kernel_initializer, self.recurrent_initializer = kernel_initializer, recurrent_initializer
        self.bias_initializer = bias_initializer

    def get_initial_state(self, batch_size=None):
        """Zero states: a list of one [batch_size, units] tensor per state (no batch axis when None)."""
        shape = [self.units] if batch_size is None else [batch_size, self.units]
        return [array_ops.zeros(shape, self.dtype) for _ in self.state_size]

    def _states(self, states):
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        if len(states) != len(self.state_size):
            raise ValueError(f"{type(self).__name__} takes {len(self.state_size)} state tensor(s), got {len(states)}")
        return [convert_to_tensor(s, dtype=self.dtype) for s in states]

    def __call__(self, inputs, states, training=None):
        return super().__call__(inputs, states)


class LSTMCell(_Cell):
    """One LSTM step, as `tf.keras.layers.LSTMCell`: `h, [h, c] = cell(x, [h, c])`.
    With z = x @ kernel + h @ recurrent_kernel + bias split into i, f, g, o
    (Keras's order): c' = sigmoid(f) * c + sigmoid(i) * tanh(g),
    h' = sigmoid(o) * tanh(c'). `unit_forget_bias` starts the forget gate's
    bias at 1."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, name=None, dtype=None):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, name, dtype)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        """[units, units]: the sizes of h and c."""
        return [self.units, self.units]

    def build(self, input_shape):
        """Makes `kernel` [features, 4 units], `recurrent_kernel` [units, 4 units] and `bias` [4 units]."""
        u = self.units
        self.kernel = self.add_weight("kernel", (input_shape[-1], 4 * u), self.kernel_initializer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (u, 4 * u), self.recurrent_initializer)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", (4 * u,), self.bias_initializer)
            if self.unit_forget_bias:
                ones = initializers.Ones()((u,), self.dtype)
                self.bias.assign(array_ops.concat([self.bias[:u], ones, self.bias[2 * u:]], axis=0))

    def call(self, inputs, states):
        """(h', [h', c']) from inputs [batch, features] and states [h, c]."""
        h, c = self._states(states)
        z = math_ops.matmul(convert_to_tensor(inputs, dtype=self.dtype), self.kernel) + \
            math_ops.matmul(h, self.recurrent_kernel)
        if self.bias is not None:
            z = z + self.bias
        i, f, g, o = array_ops.split(z, 4, axis=-1)
        c_new = self.recurrent_activation(f) * c + self.recurrent_activation(i) * self.activation(g)
        h_new = self.recurrent_activation(o) * self.activation(c_new)
        return h_new, [h_new, c_new]


class GRUCell(_Cell):
    """One GRU step, as `tf.keras.layers.GRUCell`: `h, [h] = cell(x, [h])`.
    Gates in Keras's order z, r, candidate; with `reset_after` (Keras's
    default) the reset gate multiplies h @ recurrent_kernel + recurrent bias:
    z = sigmoid(x_z + h_z), r = sigmoid(x_r + h_r), n = tanh(x_n + r * h_n),
    h' = z * h + (1 - z) * n; otherwise n = tanh(x_n + (r * h) @ U_n)."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 reset_after=True, name=None, dtype=None):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, name, dtype)
        self.reset_after = bool(reset_after)

    @property
    def state_size(self):
        """[units]: the size of h."""
        return [self.units]

    def build(self, input_shape):
        """Makes `kernel` [features, 3 units], `recurrent_kernel` [units, 3 units] and
        `bias` ([2, 3 units] with reset_after: input and recurrent biases; else [3 units])."""
        u = self.units
        self.kernel = self.add_weight("kernel", (input_shape[-1], 3 * u), self.kernel_initializer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (u, 3 * u), self.recurrent_initializer)
        self.bias = None
        if self.use_bias:
            shape = (2, 3 * u) if self.reset_after else (3 * u,)
            self.bias = self.add_weight("bias", shape, self.bias_initializer)

    def call(self, inputs, states):
        """(h', [h']) from inputs [batch, features] and states [h]."""
        (h,) = self._states(states)
        u = self.units
        x = math_ops.matmul(convert_to_tensor(inputs, dtype=self.dtype), self.kernel)
        if self.bias is not None:
            x = x + (self.bias[0] if self.reset_after else self.bias)
        x_z, x_r, x_n = array_ops.split(x, 3, axis=-1)
        if self.reset_after:
            inner = math_ops.matmul(h, self.recurrent_kernel)
            if self.bias is not None:
                inner = inner + self.bias[1]
            h_z, h_r, h_n = array_ops.split(inner, 3, axis=-1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            n = self.activation(x_n + r * h_n)
        else:
            h_zr = math_ops.matmul(h, self.recurrent_kernel[:, :2 * u])
            h_z, h_r = array_ops.split(h_zr, 2, axis=-1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            n = self.activation(x_n + math_ops.matmul(r * h, self.recurrent_kernel[:, 2 * u:]))
        h_new = z * h + (1.0 - z) * n
        return h_new, [h_new]


