"""The base of td.keras.layers: a td.Module that makes its variables on its
first call, from the shape of its input (Keras's build), and activations by name."""

from treadle import math as tdmath
from treadle import nn as tdnn
from treadle.framework import context, dtypes
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.variables import Variable
from treadle.keras import initializers
from treadle.module.module import Module


class Layer(Module):
    """A layer: `layer(inputs, ...)` runs `call`, first running `build(input_shape)`
    once to make the variables (outside any trace, so a first call inside a
    `td.function` or a LoomOp works too)."""

    def __init__(self, name=None, dtype=None):
        super().__init__(name=name)
        self.built = False
        self.dtype = dtypes.as_dtype(dtype or dtypes.float32)

    def build(self, input_shape):
        """Makes the layer's variables for inputs of `input_shape`; the first call does it."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The layer's computation; subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__} must implement call()")

    def __call__(self, inputs, *args, **kwargs):
        if not self.built:
            shape = _shape_of(inputs)
            with context.init_scope():
                self.build(shape)
            self.built = True
        return self.call(inputs, *args, **kwargs)

    def add_weight(self, name, shape, initializer="zeros", trainable=True, dtype=None):
        """A new variable of `shape`, filled by `initializer` (a name or an initializer)."""
        init = initializers.get(initializer)
        with context.init_scope():
            return Variable(init(shape, dtype=dtype or self.dtype), trainable=trainable,
                            name=f"{self.name}/{name}")

    @property
    def weights(self):
        """The layer's variables (as `variables`), as Keras names them."""
        return list(self.variables)

    @property
    def trainable_weights(self):
        """The layer's trainable variables, as Keras names them."""
        return list(self.trainable_variables)


def _shape_of(inputs):
    """The static shape of a layer's first input, as a tuple (None for unknown sizes)."""
    if isinstance(inputs, (list, tuple)):
        inputs = inputs[0]
    if not isinstance(inputs, Tensor) and not isinstance(inputs, Variable):
        inputs = convert_to_tensor(inputs)
    dims = inputs.shape.as_list() if inputs.shape.rank is not None else None
    if dims is None:
        raise ValueError(f"a layer cannot be built from an input of unknown rank ({inputs!r})")
    return tuple(dims)


_ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "softmax": "softmax", "gelu": "gelu",
                "softplus": "softplus", "elu": "elu", "selu": "selu", "exp": "exp"}


def activation(identifier):
    """A function from an activation's name ("relu", "tanh", ...), None or
    "linear" (the identity), or a callable (returned as it is)."""
    if identifier is None or identifier == "linear":
        return lambda x: x
    if callable(identifier):
        return identifier
    if identifier in _ACTIVATIONS:
        name = _ACTIVATIONS[identifier]
        for namespace in (tdnn, tdmath):
            if hasattr(namespace, name):
                return getattr(namespace, name)
    raise ValueError(f"Unknown activation: {identifier!r}; known: linear, {', '.join(sorted(_ACTIVATIONS))}")
