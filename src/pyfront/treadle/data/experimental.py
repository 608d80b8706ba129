"""td.data.experimental: tf.data.experimental's names that treadle has."""

from treadle.data.dataset_ops import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY  # noqa: F401


def cardinality(dataset):
    return dataset.cardinality()
