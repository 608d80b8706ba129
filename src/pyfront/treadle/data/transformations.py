"""Element-wise and ordering transformations: map, filter, shuffle, repeat,
take, skip, cache, take_while, scan and reduce."""

import os
import threading

import numpy as np

from treadle import _core, errors
from treadle.autograph import converter
from treadle.autograph.operators import dataset_loops
from treadle.data import structure
from treadle.data.dataset_ops import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, as_count,
                                      parallelism)
from treadle.data.functions import StructuredFunction
from treadle.framework import context, dtypes
from treadle.ops import random_ops


class MapDataset(Dataset):
    """map: the traced function on every element, in C++; with
    num_parallel_calls, on that many C++ threads (the graph runs without the
    GIL), in order unless deterministic=False."""

    def __init__(self, input_dataset, map_func, num_parallel_calls, deterministic):
        self._input = input_dataset
        self._fn = StructuredFunction(map_func, (input_dataset.element_spec,), "map")
        self._spec = self._fn.output_spec
        self._threads = parallelism(num_parallel_calls)
        self._deterministic = deterministic is not False

    def _cpp_stage(self):
        executable, captures = self._fn.executable()
        if self._threads == 1:
            return _core.data_map(self._input._input_stage(), executable, captures)
        return _core.data_parallel_map(self._input._input_stage(), executable, captures, self._threads,
                                       self._deterministic)

    def _cardinality(self):
        return self._input._cardinality()


def _predicate(fn, spec, what, arg_specs=None):
    traced = StructuredFunction(fn, arg_specs or (spec,), what)
    out = traced.output_flat_specs
    if len(out) != 1 or out[0].dtype != dtypes.bool or out[0].shape.rank != 0:
        raise ValueError(f"Invalid `predicate`. `predicate` must return a td.bool scalar tensor, but its return "
                         f"type is {traced.output_spec}")
    return traced


class FilterDataset(Dataset):
    def __init__(self, input_dataset, predicate):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        self._predicate = _predicate(predicate, self._spec, "filter")

    def _cpp_stage(self):
        executable, captures = self._predicate.executable()
        return _core.data_filter(self._input._input_stage(), executable, captures)


class TakeWhileDataset(Dataset):
    def __init__(self, input_dataset, predicate):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        self._predicate = _predicate(predicate, self._spec, "take_while")

    def _py_iter(self):
        keep = self._predicate
        for flat in self._input._flat_iter():
            if not keep(flat)[0].numpy():
                return
            yield flat


class ShuffleDataset(Dataset):
    """shuffle: TensorFlow's buffer algorithm, in C++. A buffer of buffer_size
    elements is filled; each output is a uniformly chosen buffer element,
    replaced by the next input. With a seed (or a global seed,
    td.random.set_seed) the orders are reproducible; reshuffle_each_iteration
    =False repeats one order."""

    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        self._buffer_size = as_count(buffer_size, "shuffle's buffer_size")
        if self._buffer_size < 1:
            raise errors.InvalidArgumentError(None, None, f"shuffle: buffer_size must be greater than zero, got "
                                                          f"{self._buffer_size}")
        seed1, seed2 = random_ops.get_seed(seed)
        if seed1 is None:  # nondeterministic: one random seed per dataset
            seed1, seed2 = (int(x) for x in np.random.SeedSequence().generate_state(2))
        self._seeds = (seed1, seed2)
        self._reshuffle = bool(reshuffle_each_iteration)

    def _cpp_stage(self):
        return _core.data_shuffle(self._input._input_stage(), self._buffer_size, *self._seeds, self._reshuffle)

    def _cardinality(self):
        return self._input._cardinality()


class RepeatDataset(Dataset):
    """repeat(count): the input `count` times (forever for None or -1), each
    pass a fresh iteration (so a shuffle reshuffles)."""

    def __init__(self, input_dataset, count):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        self._count = -1 if count is None else as_count(count, "repeat's count")

    def _cpp_stage(self):
        return _core.data_repeat(self._input._input_stage(), self._count)

    def _cardinality(self):
        n = self._input._cardinality()
        if self._count == 0 or n == 0:
            return 0
        if n == UNKNOWN_CARDINALITY:
            return UNKNOWN_CARDINALITY
        if self._count < 0 or n == INFINITE_CARDINALITY:
            return INFINITE_CARDINALITY
        return n * self._count


class TakeDataset(Dataset):
    def __init__(self, input_dataset, count):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        self._count = as_count(count, "take's count")

    def _cpp_stage(self):
        return _core.data_take(self._input._input_stage(), self._count)

    def _cardinality(self):
        n = self._input._cardinality()
        if self._count < 0:
            return n
        if self._count == 0:
            return 0
        if n == UNKNOWN_CARDINALITY:
            return UNKNOWN_CARDINALITY
        return self._count if n == INFINITE_CARDINALITY else min(n, self._count)


class SkipDataset(Dataset):
    def __init__(self, input_dataset, count):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        self._count = as_count(count, "skip's count")

    def _cpp_stage(self):
        return _core.data_skip(self._input._input_stage(), self._count)

    def _cardinality(self):
        n = self._input._cardinality()
        if n < 0:
            return n
        return 0 if self._count < 0 else max(n - self._count, 0)


class CacheDataset(Dataset):
    """cache(): the first complete iteration's elements are kept in memory and
    later iterations read them. A partial first iteration keeps nothing, as
    in TensorFlow.

    cache(filename): the same on disk, in C++ (data/cache_file.cc): the first
    complete iteration writes `filename.data` and `filename.index`; later
    iterations, and other datasets given the same filename, read them instead
    of their input. An iteration that stops early leaves no cache; a second
    iteration writing the same cache at once raises AlreadyExistsError; a
    truncated or corrupt cache raises DataLossError."""

    def __init__(self, input_dataset, filename):
        self._input = input_dataset
        self._spec = input_dataset.element_spec
        self._filename = _path_string(filename)
        self._cache = None
        self._lock = threading.Lock()

    def _cpp_stage(self):
        if not self._filename:
            return None
        specs = structure.flat_specs(self._spec)
        shapes = [s.shape.as_list() if s.shape.rank is not None else None for s in specs]
        return _core.data_cache_file(self._input._input_stage(), self._filename, [s.dtype for s in specs], shapes)

    def _py_iter(self):
        with self._lock:
            cached = self._cache
        if cached is not None:
            yield from cached
            return
        filling = []
        for flat in self._input._flat_iter():
            filling.append(flat)
            yield flat
        with self._lock:
            self._cache = filling

    def _cardinality(self):
        return self._input._cardinality()


def _path_string(filename):
    """A file name given as str, bytes, os.PathLike or a string scalar tensor."""
    if hasattr(filename, "numpy"):
        filename = filename.numpy()
    if isinstance(filename, np.ndarray) and filename.ndim == 0:
        filename = filename.item()
    filename = os.fspath(filename)
    return filename.decode() if isinstance(filename, bytes) else filename


class ScanDataset(Dataset):
    """scan: scan_func(state, element) -> (new_state, output). The function is
    traced for the initial state's spec; if the new state's shapes differ, it
    is traced again for the shapes both fit, as TensorFlow does."""

    def __init__(self, input_dataset, initial_state, scan_func):
        self._input = input_dataset
        self._initial = structure.to_tensors(initial_state, "scan's initial state")
        self._fn, self._state_spec = _trace_with_state(scan_func, self._initial, input_dataset.element_spec,
                                                       "scan", outputs_state_first=True)
        out = self._fn.output_spec
        self._spec = out[1]
        self._num_state = len(structure.flat_specs(self._state_spec))

    def _py_iter(self):
        state = structure.flatten(self._initial)
        n = self._num_state
        for flat in self._input._flat_iter():
            out = self._fn(state + flat)
            state, result = out[:n], out[n:]
            yield result

    def _cardinality(self):
        return self._input._cardinality()


def _trace_with_state(fn, initial, element_spec, what, outputs_state_first):
    state_spec = structure.spec_of(initial)
    for _ in range(8):
        traced = StructuredFunction(fn, (state_spec, element_spec), what, unpack_tuples=False)
        out = traced.output_spec
        if outputs_state_first:
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError(f"td.data: the {what} function must return a pair (new_state, output_element), "
                                f"got {out}")
            new_state = out[0]
        else:
            new_state = out
        relaxed = structure.common_spec(state_spec, new_state, f"the {what} function's new state vs. its initial "
                                                              "state")
        if relaxed == state_spec:
            return traced, state_spec
        state_spec = relaxed
    raise ValueError(f"td.data: the {what} function's state shapes did not settle after 8 traces")


def reduce_dataset(dataset, initial_state, reduce_func):
    """Dataset.reduce: folds reduce_func(state, element) over the dataset; the final state."""
    if dataset._cardinality() == INFINITE_CARDINALITY:
        raise errors.InvalidArgumentError(None, None, "Dataset.reduce: the dataset is infinite")
    if context.current_graph() is not None:
        return reduce_in_graph(dataset, initial_state, reduce_func)
    initial = structure.to_tensors(initial_state, "reduce's initial state")
    fn, state_spec = _trace_with_state(reduce_func, initial, dataset.element_spec, "reduce",
                                       outputs_state_first=False)
    state = structure.flatten(initial)
    for flat in dataset._flat_iter():
        state = fn(state + flat)
    return structure.pack(state_spec, state)


def reduce_in_graph(dataset, initial_state, reduce_func):
    """Dataset.reduce inside a td.function: the same While over the dataset
    that AutoGraph makes of `for x in dataset`, with the state as its variable."""
    fn = converter.convert(reduce_func)
    state = [structure.to_tensors(initial_state, "reduce's initial state")]

    def body(element):
        state[0] = fn(state[0], element)

    def set_state(values):
        state[0] = values[0]

    dataset_loops.for_stmt(dataset, None, body, lambda: (state[0],), set_state, ("the reduce state",), {})
    return state[0]
