"""td.experimental: interfaces outside TensorFlow's stable core (as tf.experimental)."""

from treadle.experimental import dlpack
from treadle.experimental.deadline import deadline
from treadle.experimental.extension_type import ExtensionType

__all__ = ["ExtensionType", "deadline", "dlpack"]


def __dir__():
    return sorted(__all__)
