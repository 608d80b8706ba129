"""Dense, Embedding, Dropout, LayerNormalization and Sequential."""

import inspect

from treadle import math as tdmath
from treadle import nn as tdnn
from treadle.framework import dtypes
from treadle.framework.tensor import convert_to_tensor
from treadle.keras.layers.base import Layer, activation
from treadle.ops import array_ops, math_ops


class Dense(Layer):
    """`activation(inputs @ kernel + bias)`, as `tf.keras.layers.Dense`. The
    kernel is [input features, units], made on the first call (or give
    `input_dim`). Inputs of rank above 2 are multiplied along their last axis."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", input_dim=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if not isinstance(units, int) or units < 1:
            raise ValueError(f"Dense: units must be a positive int, got {units!r}")
        self.units, self.use_bias = units, bool(use_bias)
        self.activation = _activation(activation)
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        if input_dim is not None:
            self.build((None, input_dim))
            self.built = True

    def build(self, input_shape):
        """Makes `kernel` [input_shape[-1], units] and `bias` [units]."""
        features = input_shape[-1]
        if features is None:
            raise ValueError(f"Dense needs the size of its inputs' last axis, got shape {input_shape}")
        self.kernel = self.add_weight("kernel", (features, self.units), self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.units,), self.bias_initializer) if self.use_bias else None

    def call(self, inputs):
        """`activation(inputs @ kernel + bias)`."""
        x = convert_to_tensor(inputs, dtype=self.kernel.dtype)
        rank = x.shape.rank
        if rank == 2:
            y = math_ops.matmul(x, self.kernel)
        elif rank == 1:
            y = array_ops.reshape(math_ops.matmul(array_ops.reshape(x, [1, -1]), self.kernel), [self.units])
        else:
            middle = x.shape.as_list()[1:-1]
            if None in middle:
                raise ValueError(f"Dense: inputs of rank {rank} need known sizes between the first and last axes, "
                                 f"got shape {x.shape}")
            flat = math_ops.matmul(array_ops.reshape(x, [-1, x.shape[-1]]), self.kernel)
            y = array_ops.reshape(flat, [-1] + middle + [self.units])
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)


def _activation(identifier):
    return activation(identifier)


class Embedding(Layer):
    """Rows of an [input_dim, output_dim] table, gathered by integer ids, as
    `tf.keras.layers.Embedding`; ids of any shape give [*ids.shape, output_dim]."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if not isinstance(input_dim, int) or not isinstance(output_dim, int) or input_dim < 1 or output_dim < 1:
            raise ValueError(f"Embedding: input_dim and output_dim must be positive ints, got {input_dim!r}, "
                             f"{output_dim!r}")
        self.input_dim, self.output_dim = input_dim, output_dim
        self.embeddings = self.add_weight("embeddings", (input_dim, output_dim), embeddings_initializer)
        self.built = True

    def call(self, inputs):
        """The rows of the table that `inputs` (integer ids) name."""
        ids = convert_to_tensor(inputs)
        if not ids.dtype.is_integer:
            ids = math_ops.cast(ids, dtypes.int32)
        return array_ops.gather(self.embeddings, ids)


class Dropout(Layer):
    """In training (`layer(x, training=True)`), sets each value to zero with
    probability `rate` and scales the others by 1 / (1 - rate); otherwise
    returns its input, as `tf.keras.layers.Dropout`."""

    def __init__(self, rate, noise_shape=None, seed=None, name=None):
        super().__init__(name=name)
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs, training=False):
        """`inputs` with dropout when `training` is True."""
        if not training or self.rate == 0.0:
            return convert_to_tensor(inputs)
        return tdnn.dropout(inputs, self.rate, noise_shape=self.noise_shape, seed=self.seed)


class LayerNormalization(Layer):
    """Normalizes each example along `axis` to mean 0 and variance 1, then
    scales by `gamma` and shifts by `beta`, as `tf.keras.layers.LayerNormalization`:
    (x - mean) / sqrt(variance + epsilon) * gamma + beta."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if not isinstance(axis, int):
            raise TypeError(f"LayerNormalization: axis must be an int, got {axis!r}")
        self.axis, self.epsilon, self.center, self.scale = axis, float(epsilon), bool(center), bool(scale)
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer

    def build(self, input_shape):
        """Makes `gamma` and `beta`, one value per position along `axis`."""
        rank = len(input_shape)
        if not -rank <= self.axis < rank:
            raise ValueError(f"LayerNormalization: axis {self.axis} is out of range for inputs of rank {rank}")
        self._axis = self.axis % rank
        size = input_shape[self._axis]
        if size is None:
            raise ValueError(f"LayerNormalization needs the size of axis {self.axis}, got shape {input_shape}")
        self._broadcast = [1] * rank
        self._broadcast[self._axis] = size
        self.gamma = self.add_weight("gamma", (size,), self.gamma_initializer) if self.scale else None
        self.beta = self.add_weight("beta", (size,), self.beta_initializer) if self.center else None

    def call(self, inputs):
        """The normalized, scaled and shifted inputs."""
        x = convert_to_tensor(inputs, dtype=self.dtype)
        mean = tdmath.reduce_mean(x, axis=self._axis, keepdims=True)
        centered = x - mean
        variance = tdmath.reduce_mean(tdmath.square(centered), axis=self._axis, keepdims=True)
        y = centered * tdmath.rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            y = y * array_ops.reshape(self.gamma, self._broadcast)
        if self.beta is not None:
            y = y + array_ops.reshape(self.beta, self._broadcast)
        return y


class Sequential(Layer):
    """Layers applied one after the other, as `tf.keras.Sequential` (without
    compile and fit): `model(x)` is `layers[-1](...layers[0](x))`. A `training`
    argument reaches the layers whose call takes one (Dropout)."""

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._layers = []
        for layer in layers or []:
            self.add(layer)
        self.built = True

    def add(self, layer):
        """Appends `layer` (a callable, usually a td.keras layer)."""
        if not callable(layer):
            raise TypeError(f"Sequential.add takes a layer (a callable), got {layer!r}")
        self._layers.append(layer)

    @property
    def layers(self):
        """The layers, in order."""
        return list(self._layers)

    def call(self, inputs, training=None):
        """Runs the layers in order."""
        x = inputs
        for layer in self._layers:
            x = layer(x, training=training) if training is not None and _takes_training(layer) else layer(x)
        return x


def _takes_training(layer):
    call = getattr(layer, "call", layer)
    try:
        return "training" in inspect.signature(call).parameters
    except (TypeError, ValueError):
        return False
