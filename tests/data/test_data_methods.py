"""Dataset's sources, transformations and iteration are written in
data/dataset_methods.py, above the modules that subclass Dataset, and
installed on Dataset (dataset_ops.install_methods): dataset_ops imports none
of its subclasses' modules."""

import pytest

import treadle as td
from treadle.data import dataset_methods, dataset_ops

Dataset = td.data.Dataset

TF_DATASET_METHODS = ("from_tensors", "from_tensor_slices", "range", "from_generator", "zip", "list_files",
                      "concatenate", "map", "filter", "batch", "padded_batch", "unbatch", "shuffle", "repeat",
                      "take", "skip", "prefetch", "cache", "interleave", "enumerate", "take_while", "scan",
                      "reduce", "apply", "as_numpy_iterator", "cardinality", "element_spec", "__iter__")


def test_the_methods_are_dataset_s_own():
    for name in TF_DATASET_METHODS:
        assert name in vars(Dataset), name
    assert Dataset.map.__qualname__ == "Dataset.map"
    assert Dataset.range.__qualname__ == "Dataset.range"
    assert isinstance(vars(Dataset)["range"], staticmethod)  # Dataset.range(3), as in TensorFlow
    assert [int(x) for x in Dataset.range(3).map(lambda x: x + 1)] == [1, 2, 3]


def test_a_method_is_installed_once():
    class Again:
        def take(self, count):
            return "shadowed"

        def helper(self):
            return "new"

    with pytest.raises(AttributeError, match=r"Dataset.take defined twice \(.*Again and Dataset\)"):
        dataset_ops.install_methods(Again)
    assert "helper" not in vars(Dataset)  # nothing was installed
    assert vars(Dataset)["take"] is vars(dataset_methods.DatasetMethods)["take"]
