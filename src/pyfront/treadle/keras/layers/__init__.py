"""td.keras.layers: Dense, Embedding, Dropout, LayerNormalization, LSTMCell,
GRUCell and Sequential, with TensorFlow's Keras names and numbers, as
td.Modules. A layer makes its variables on its first call (from its input's
shape), also when that call is inside a td.function or a LoomOp."""

from treadle.keras.layers.base import Layer
from treadle.keras.layers.core import Dense, Dropout, Embedding, LayerNormalization, Sequential
from treadle.keras.layers.recurrent import GRUCell, LSTMCell

__all__ = ["Layer", "Dense", "Dropout", "Embedding", "LayerNormalization", "LSTMCell", "GRUCell", "Sequential"]


def __dir__():
    return sorted(__all__)
