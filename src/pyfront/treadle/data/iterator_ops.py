"""Iterators over datasets, and prefetch: a background thread that runs the
pipeline ahead of the consumer into a bounded buffer."""

import queue
import threading
import weakref

from treadle import errors
from treadle.data import structure
from treadle.data.dataset_ops import AUTOTUNE, Dataset, as_count


class OwnedIterator:
    """iter(dataset): yields elements in the element_spec's structure."""

    def __init__(self, dataset):
        self._spec = dataset.element_spec
        self._flat = dataset._flat_iter()

    @property
    def element_spec(self):
        return self._spec

    def __iter__(self):
        return self

    def __next__(self):
        return structure.pack(self._spec, next(self._flat))

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
        from treadle.util import nest
        return nest.map_structure(lambda t: t.numpy(), super().__next__())

    next = __next__


class PrefetchDataset(Dataset):
    def __init__(self, input_dataset, buffer_size):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        n = as_count(buffer_size, "prefetch's buffer_size")
        if n < 0 and n != AUTOTUNE:
            raise errors.InvalidArgumentError(None, None, f"prefetch: buffer_size must be >= 0 or td.data.AUTOTUNE, "
                                                          f"got {n}")
        self._buffer_size = 2 if n == AUTOTUNE else n

    def _flat_iter(self):
        if self._buffer_size == 0:
            return self._input._flat_iter()
        return _Prefetcher(self._input._flat_iter(), self._buffer_size)

    def _cardinality(self):
        return self._input._cardinality()


_END = object()


class _Prefetcher:
    """Runs `source` in a daemon thread, at most `size` elements ahead. An
    exception in the pipeline is re-raised to the consumer at the element
    where it happened. When the consumer drops the iterator, the thread stops."""

    def __init__(self, source, size):
        self._queue = queue.Queue(maxsize=size)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=_fill, args=(source, self._queue, self._stop),
                                        name="td.data.prefetch", daemon=True)
        self._thread.start()
        self._done = False
        weakref.finalize(self, self._stop.set)

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        item = self._queue.get()
        if item is _END:
            self._done = True
            raise StopIteration
        if isinstance(item, _Failure):
            self._done = True
            raise item.error
        return item


class _Failure:
    def __init__(self, error):
        self.error = error


def _fill(source, q, stop):
    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    try:
        for flat in source:
            if not put(flat):
                return
    except BaseException as e:  # handed to the consumer, with its traceback
        put(_Failure(e))
        return
    put(_END)
