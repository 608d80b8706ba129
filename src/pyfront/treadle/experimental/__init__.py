"""td.experimental: interfaces outside TensorFlow's stable core (as tf.experimental)."""

from treadle.experimental import dlpack
from treadle.experimental.deadline import deadline

__all__ = ["deadline", "dlpack"]
