"""td.experimental: interfaces outside TensorFlow's stable core (as tf.experimental)."""

from treadle.experimental import dlpack

__all__ = ["dlpack"]
