"""Iterators over datasets, and prefetch."""

from treadle import _core, errors
from treadle.data import structure
from treadle.data.dataset_ops import AUTOTUNE, Dataset, as_count
from treadle.data.graph_iteration import IteratorType
from treadle.util import nest


class OwnedIterator:
    """iter(dataset): yields elements in the element_spec's structure."""

    def __init__(self, dataset):
        self._spec = dataset.element_spec
        self._flat = dataset._flat_iter()

    @property
    def element_spec(self):
        """The structure of an element (as the dataset's `element_spec`)."""
        return self._spec

    def __iter__(self):
        return self

    def __next__(self):
        """The next element; `StopIteration` at the end."""
        return structure.pack(self._spec, next(self._flat))

    def __tf_tracing_type__(self, tracing_context):
        """An iterator argument of a td.function: traced once per element_spec;
        the function pulls from this iterator (data/graph_iteration.py)."""
        return IteratorType(self._spec)

    def get_next(self):
        """The next element; OutOfRangeError at the end (TensorFlow's `End of sequence`)."""
        try:
            return next(self)
        except StopIteration:
            raise errors.OutOfRangeError(None, None, "End of sequence") from None

    next = __next__


class NumpyIterator(OwnedIterator):
    """as_numpy_iterator: NumPy arrays, and bytes for string scalars."""

    def __next__(self):
        return nest.map_structure(lambda t: t.numpy(), super().__next__())

    next = __next__


class PrefetchDataset(Dataset):
    """prefetch: a C++ thread runs the input pipeline up to buffer_size
    elements ahead (C++ stages without the GIL; Python stages take it per
    element). An error is raised to the consumer at the element where it
    happened, after the elements before it; dropping the iterator stops the
    thread."""

    def __init__(self, input_dataset, buffer_size):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        n = as_count(buffer_size, "prefetch's buffer_size")
        if n < 0 and n != AUTOTUNE:
            raise errors.InvalidArgumentError(None, None, f"prefetch: buffer_size must be >= 0 or td.data.AUTOTUNE, "
                                                          f"got {n}")
        self._buffer_size = 2 if n == AUTOTUNE else n

    def _cpp_stage(self):
        if self._buffer_size == 0:
            return self._input._stage()
        return _core.data_prefetch(self._input._input_stage(), self._buffer_size)

    def _py_iter(self):
        return self._input._flat_iter()

    def _cardinality(self):
        return self._input._cardinality()
