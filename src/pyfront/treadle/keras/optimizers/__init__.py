"""td.keras.optimizers: the same optimizer classes as td.optimizers (SGD,
Adam, AdamW, Adagrad, RMSprop), under Keras's name, and their learning-rate
schedules (td.keras.optimizers.schedules)."""

from treadle.keras.optimizers import schedules
from treadle.optimizers import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "schedules"]


def __dir__():
    return sorted(__all__)
