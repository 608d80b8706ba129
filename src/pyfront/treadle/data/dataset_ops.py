"""td.data.Dataset: TensorFlow's tf.data.Dataset names and semantics.

A dataset is a description; iterating it makes a fresh pipeline of stage
iterators, each yielding elements as flat lists of eager tensors (packed into
the element_spec's structure only when handed to the user). The stages live
in sources.py, transformations.py and readers.py."""

import os

import numpy as np

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
_MAX_THREADS = 64


class Dataset:
    """Subclasses set `_spec` (the element_spec) and implement `_py_iter()`
    (a new Python iterator of flat element lists), `_cardinality()` (an int)
    and, where the stage runs in C++, `_cpp_stage()` (a _core.DataStage).
    `_flat_iter()` runs the C++ pipeline when there is one: its elements then
    flow between stages without Python, and prefetch threads run it ahead
    with the GIL released."""

    _spec = None

    def _flat_iter(self):
        stage = self._stage()
        return self._py_iter() if stage is None else _stage_elements(stage.iterator())

    def _stage(self):
        if "_stage_cache" not in self.__dict__:
            self._stage_cache = self._cpp_stage()
        return self._stage_cache

    def _cpp_stage(self):
        return None

    def _input_stage(self):
        """This dataset as the input of a C++ stage: its own C++ stage, or its
        Python iteration behind a bridge that takes the GIL per element."""
        from treadle import _core
        stage = self._stage()
        return stage if stage is not None else _core.data_python(self._py_iter)

    # ------------------------------------------------------------ inspection
    @property
    def element_spec(self):
        return self._spec

    def cardinality(self):
        from treadle.framework.tensor import constant
        return constant(np.int64(self._cardinality()))

    def _cardinality(self):
        return UNKNOWN_CARDINALITY

    def __len__(self):
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True

    def __repr__(self):
        return f"<{type(self).__name__} element_spec={self._spec}>"

    # ------------------------------------------------------------ iteration
    def __iter__(self):
        from treadle.framework import context
        if context.current_graph() is not None:  # iter(dataset) inside a td.function
            from treadle.data import graph_iteration
            return graph_iteration.GraphIterator(self, self.element_spec)
        from treadle.data.iterator_ops import OwnedIterator
        return OwnedIterator(self)

    def _ag_staged_iteration(self):
        """`for x in dataset` inside a td.function (autograph/operators/dataset_loops.py)."""
        from treadle.data import graph_iteration
        return graph_iteration.StagedIteration(self, self.element_spec)

    def __tf_tracing_type__(self, context):
        """A dataset argument of a td.function: traced once per element_spec."""
        from treadle.data import graph_iteration
        return graph_iteration.DatasetType(self.element_spec)

    def as_numpy_iterator(self):
        from treadle.data.iterator_ops import NumpyIterator
        return NumpyIterator(self)

    # ------------------------------------------------------------ sources
    @staticmethod
    def from_tensors(tensors, name=None):
        from treadle.data.sources import TensorDataset
        return TensorDataset(tensors)

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        from treadle.data.sources import TensorSliceDataset
        return TensorSliceDataset(tensors)

    @staticmethod
    def range(*args, output_type=None, name=None):
        from treadle.data.sources import RangeDataset
        return RangeDataset(*args, output_type=output_type)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        from treadle.data.sources import GeneratorDataset
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        from treadle.data.sources import ZipDataset
        if datasets is not None and args:
            raise TypeError("Dataset.zip takes datasets either as positional arguments or as `datasets`, not both")
        if datasets is None:
            datasets = args[0] if len(args) == 1 else tuple(args)
        return ZipDataset(datasets)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        from treadle.data.readers import list_files
        return list_files(file_pattern, shuffle, seed)

    def concatenate(self, dataset, name=None):
        from treadle.data.sources import ConcatenateDataset
        return ConcatenateDataset(self, dataset)

    # ------------------------------------------------------------ transformations
    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        from treadle.data.transformations import MapDataset
        return MapDataset(self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate, name=None):
        from treadle.data.transformations import FilterDataset
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        from treadle.data.batching import BatchDataset
        return BatchDataset(self, batch_size, drop_remainder, num_parallel_calls, deterministic)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        from treadle.data.batching import PaddedBatchDataset
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def unbatch(self, name=None):
        from treadle.data.batching import UnbatchDataset
        return UnbatchDataset(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        from treadle.data.transformations import ShuffleDataset
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None, name=None):
        from treadle.data.transformations import RepeatDataset
        return RepeatDataset(self, count)

    def take(self, count, name=None):
        from treadle.data.transformations import TakeDataset
        return TakeDataset(self, count)

    def skip(self, count, name=None):
        from treadle.data.transformations import SkipDataset
        return SkipDataset(self, count)

    def prefetch(self, buffer_size, name=None):
        from treadle.data.iterator_ops import PrefetchDataset
        return PrefetchDataset(self, buffer_size)

    def cache(self, filename="", name=None):
        from treadle.data.transformations import CacheDataset
        return CacheDataset(self, filename)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        from treadle.data.interleave import InterleaveDataset
        return InterleaveDataset(self, map_func, cycle_length, block_length, num_parallel_calls, deterministic)

    def enumerate(self, start=0, name=None):
        from treadle.data.sources import RangeDataset, ZipDataset
        return ZipDataset((RangeDataset(start, np.iinfo(np.int64).max), self))

    def take_while(self, predicate, name=None):
        from treadle.data.transformations import TakeWhileDataset
        return TakeWhileDataset(self, predicate)

    def scan(self, initial_state, scan_func, name=None):
        from treadle.data.transformations import ScanDataset
        return ScanDataset(self, initial_state, scan_func)

    def reduce(self, initial_state, reduce_func, name=None):
        from treadle.data.transformations import reduce_dataset
        return reduce_dataset(self, initial_state, reduce_func)

    def apply(self, transformation_func):
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"Dataset.apply: `transformation_func` must return a Dataset, got {type(result).__name__}")
        return result


def _stage_elements(iterator):
    while True:
        element = iterator.next()
        if element is None:
            return
        yield element


def as_count(value, what):
    """An int64 count argument (a Python int or an integer scalar tensor)."""
    v = np.asarray(value)
    if v.ndim != 0 or not np.issubdtype(v.dtype, np.integer):
        raise TypeError(f"{what} must be an integer scalar, got {value!r}")
    return int(v)


def parallelism(num_parallel_calls):
    """How many threads AUTOTUNE or a requested count means here."""
    if num_parallel_calls is None:
        return 1
    n = as_count(num_parallel_calls, "num_parallel_calls")
    if n == AUTOTUNE:
        return max(2, os.cpu_count() or 2)
    if n < 1:
        raise ValueError(f"num_parallel_calls must be positive or td.data.AUTOTUNE, got {n}")
    return min(n, _MAX_THREADS)  # parallelism beyond this only costs threads


def check_dataset(value, what):
    if not isinstance(value, Dataset):
        raise TypeError(f"{what} must be a td.data.Dataset, got {type(value).__name__}")
    return value

