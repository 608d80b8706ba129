"""td.data: input pipelines with tf.data's names and semantics."""

from treadle.data import dataset_methods  # noqa: F401 - installs Dataset's methods
from treadle.data import experimental  # noqa: F401
from treadle.data.dataset_ops import (  # noqa: F401
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset)
from treadle.data.iterator_ops import OwnedIterator as Iterator  # noqa: F401
from treadle.data.readers import TFRecordDataset  # noqa: F401

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Dataset", "Iterator", "TFRecordDataset",
           "experimental"]


def __dir__():
    return sorted(__all__)
