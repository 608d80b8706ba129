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
    """Installed on Dataset: `self` is a Dataset."""

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
        return NumpyIterator(self)

    # ------------------------------------------------------------ sources
    @staticmethod
    def from_tensors(tensors, name=None):
        return TensorDataset(tensors)

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        return TensorSliceDataset(tensors)

    @staticmethod
    def range(*args, output_type=None, name=None):
        return RangeDataset(*args, output_type=output_type)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        if datasets is not None and args:
            raise TypeError("Dataset.zip takes datasets either as positional arguments or as `datasets`, not both")
        if datasets is None:
            datasets = args[0] if len(args) == 1 else tuple(args)
        return ZipDataset(datasets)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        return readers.list_files(file_pattern, shuffle, seed)

    def concatenate(self, dataset, name=None):
        return ConcatenateDataset(self, dataset)

    # ------------------------------------------------------------ transformations
    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        return MapDataset(self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate, name=None):
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        return BatchDataset(self, batch_size, drop_remainder, num_parallel_calls, deterministic)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def unbatch(self, name=None):
        return UnbatchDataset(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None, name=None):
        return RepeatDataset(self, count)

    def take(self, count, name=None):
        return TakeDataset(self, count)

    def skip(self, count, name=None):
        return SkipDataset(self, count)

    def prefetch(self, buffer_size, name=None):
        return PrefetchDataset(self, buffer_size)

    def cache(self, filename="", name=None):
        return CacheDataset(self, filename)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        return InterleaveDataset(self, map_func, cycle_length, block_length, num_parallel_calls, deterministic)

    def enumerate(self, start=0, name=None):
        return ZipDataset((RangeDataset(start, np.iinfo(np.int64).max), self))

    def take_while(self, predicate, name=None):
        return TakeWhileDataset(self, predicate)

    def scan(self, initial_state, scan_func, name=None):
        return ScanDataset(self, initial_state, scan_func)

    def reduce(self, initial_state, reduce_func, name=None):
        return reduce_dataset(self, initial_state, reduce_func)


install_methods(DatasetMethods)
