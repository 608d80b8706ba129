"""td.data.experimental: tf.data.experimental's names that treadle has, and
parallel weaving of loom schedules."""

from treadle.data.dataset_ops import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY  # noqa: F401
from treadle.data.parallel_weave import parallel_weave  # noqa: F401
from treadle.data.weaving import WeaveError, WorkerDiedError, WorkerTimeoutError  # noqa: F401


def cardinality(dataset):
    """`dataset.cardinality()`, as `tf.data.experimental.cardinality`."""
    return dataset.cardinality()


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "WeaveError", "WorkerDiedError", "cardinality",
           "parallel_weave"]


def __dir__():
    return sorted(__all__)
