"""The Dataset methods that make datasets of Dataset's subclasses (sources,
transformations) and iterators, installed on Dataset by
dataset_ops.install_methods. They live here, above the modules that subclass
Dataset, so that dataset_ops imports none of them (TensorFlow keeps them in
one module, whose methods import its subclasses' modules lazily)."""

import numpy as np

from treadle.data import readers
from treadle.data.batching import BatchDataset, PaddedBatchDataset, UnbatchDataset
from treadle.data.dataset_ops import install_methods
from treadle.data.graph_iteration import DatasetType, GraphIterator, StagedIteration, refuse_python_loop
from treadle.data.interleave import InterleaveDataset
from treadle.data.iterator_ops import NumpyIterator, OwnedIterator, PrefetchDataset
from treadle.data.sources import (ConcatenateDataset, GeneratorDataset, RangeDataset, TensorDataset,
                                  TensorSliceDataset, ZipDataset)
from treadle.data.transformations import (CacheDataset, FilterDataset, MapDataset, RepeatDataset, ScanDataset,
                                          ShuffleDataset, SkipDataset, TakeDataset, TakeWhileDataset,
                                          reduce_dataset)
from treadle.framework import context


class DatasetMethods:
    """The sources, transformations and iteration of `td.data.Dataset`.
    (Installed on Dataset: `self` is a Dataset.)"""

    # ------------------------------------------------------------ iteration
    def __iter__(self):
        if context.current_graph() is not None:  # iter(dataset) inside a td.function
            refuse_python_loop("iterating a dataset")
            return GraphIterator(self, self.element_spec)
        return OwnedIterator(self)

    def _ag_staged_iteration(self):
        """`for x in dataset` inside a td.function (autograph/operators/dataset_loops.py)."""
        return StagedIteration(self, self.element_spec)

    def __tf_tracing_type__(self, tracing_context):
        """A dataset argument of a td.function: traced once per element_spec."""
        return DatasetType(self.element_spec)

    def as_numpy_iterator(self):
        """An iterator over the dataset's elements as NumPy values (bytes for strings), in the dataset's
        structure."""
        return NumpyIterator(self)

    # ------------------------------------------------------------ sources
    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset of one element: `tensors` (a tensor or a nest of them), as it is."""
        return TensorDataset(tensors)

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """A dataset of the slices of `tensors` along their first axis: element i is `tensors[i]` (for a
        nest, the i-th slice of every tensor, which must agree in their first dimension)."""
        return TensorSliceDataset(tensors)

    @staticmethod
    def range(*args, output_type=None, name=None):
        """A dataset of int64 numbers, as Python's `range(stop)`, `range(start, stop)` or `range(start,
        stop, step)`; `output_type` picks another integer dtype."""
        return RangeDataset(*args, output_type=output_type)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        """A dataset of what `generator()` (called with `args`) yields, each element converted to the
        structure, dtypes and shapes of `output_signature` (or `output_types` and `output_shapes`). The
        generator runs in Python, once per iteration."""
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        """A dataset of tuples (or the nest given) of the elements of several datasets, in step; it ends
        with the shortest."""
        if datasets is not None and args:
            raise TypeError("Dataset.zip takes datasets either as positional arguments or as `datasets`, not both")
        if datasets is None:
            datasets = args[0] if len(args) == 1 else tuple(args)
        return ZipDataset(datasets)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        """A dataset of the file names matching the glob `file_pattern` (a string or a list of them),
        shuffled unless `shuffle=False` (with `seed`); no match is an `InvalidArgumentError`."""
        return readers.list_files(file_pattern, shuffle, seed)

    def concatenate(self, dataset, name=None):
        """The elements of this dataset, then those of `dataset`, whose element structure and dtypes must
        match."""
        return ConcatenateDataset(self, dataset)

    # ------------------------------------------------------------ transformations
    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """A dataset of `map_func(element)` (a tuple element is passed as separate arguments). `map_func` is
        traced once into a graph; Python inside it goes through `td.py_function`. With `num_parallel_calls`
        (a number or `td.data.AUTOTUNE`) the graph runs on that many C++ threads, in order unless
        `deterministic=False`."""
        return MapDataset(self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate, name=None):
        """A dataset of the elements for which `predicate(element)`, traced into a graph, gives a scalar
        bool tensor that is True."""
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        """A dataset of batches of `batch_size` consecutive elements, stacked along a new first axis; the
        last batch is smaller unless `drop_remainder=True` drops it. With `num_parallel_calls`, batches are
        assembled on C++ threads."""
        return BatchDataset(self, batch_size, drop_remainder, num_parallel_calls, deterministic)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        """Like `batch`, for elements whose shapes differ: each component is padded to `padded_shapes` (by
        default the largest shape in the batch) with `padding_values` (by default 0, or b'' for strings)."""
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def unbatch(self, name=None):
        """Splits each element along its first axis into elements of one row each: the inverse of `batch`."""
        return UnbatchDataset(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        """A dataset of the same elements in random order, drawn from a buffer of `buffer_size` elements.
        `seed` makes the order repeatable; each iteration shuffles anew unless
        `reshuffle_each_iteration=False`."""
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None, name=None):
        """The dataset's elements `count` times over (forever when `count` is None or -1)."""
        return RepeatDataset(self, count)

    def take(self, count, name=None):
        """A dataset of the first `count` elements (all of them when `count` is -1)."""
        return TakeDataset(self, count)

    def skip(self, count, name=None):
        """A dataset without its first `count` elements (without any when `count` is -1)."""
        return SkipDataset(self, count)

    def prefetch(self, buffer_size, name=None):
        """A dataset that produces up to `buffer_size` elements ahead (`td.data.AUTOTUNE`: a buffer it
        picks) in a C++ thread, while the consumer works on the current one."""
        return PrefetchDataset(self, buffer_size)

    def cache(self, filename="", name=None):
        """Caches the elements: in memory when `filename` is empty, otherwise in the files `filename.data`
        and `filename.index`, which the first complete iteration writes and later iterations (and other
        datasets given the same filename) read instead of the input."""
        return CacheDataset(self, filename)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        """Maps each element to a dataset with `map_func` and interleaves their elements: `cycle_length`
        datasets open at once, `block_length` consecutive elements from each in turn. With
        `num_parallel_calls`, C++ threads read the open datasets ahead."""
        return InterleaveDataset(self, map_func, cycle_length, block_length, num_parallel_calls, deterministic)

    def enumerate(self, start=0, name=None):
        """A dataset of pairs `(i, element)`, i an int64 counting from `start`."""
        return ZipDataset((RangeDataset(start, np.iinfo(np.int64).max), self))

    def take_while(self, predicate, name=None):
        """The elements up to the first for which `predicate(element)` is False."""
        return TakeWhileDataset(self, predicate)

    def scan(self, initial_state, scan_func, name=None):
        """A dataset of `scan_func`'s outputs: `scan_func(state, element)` returns `(new_state, output)`,
        starting from `initial_state`."""
        return ScanDataset(self, initial_state, scan_func)

    def reduce(self, initial_state, reduce_func, name=None):
        """Reduces the dataset to one value: `reduce_func(state, element)` returns the new state, starting
        from `initial_state`; the final state is returned as tensors."""
        return reduce_dataset(self, initial_state, reduce_func)


install_methods(DatasetMethods)
