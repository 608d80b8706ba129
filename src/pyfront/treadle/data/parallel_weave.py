"""td.data.experimental.parallel_weave: a dataset of schedules woven by a
Python weave function in a pool of worker processes (or Ray tasks)."""

import collections
import concurrent.futures
import concurrent.futures.process
import multiprocessing
import os

import numpy as np

from treadle import _core
from treadle.data import structure, weaving, worker_pools
from treadle.data.dataset_ops import UNKNOWN_CARDINALITY, Dataset
from treadle.data.ray_weaving import RayExecutor
from treadle.framework import dtypes
from treadle.framework.tensor import constant, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.loom.loom import Loom


def parallel_weave(examples, weave_fn, loom, processes=None, ordered=True, examples_per_schedule=1,
                   chunk_size=16, extra_signature=None, start_method="spawn", ray_address=None,
                   use_ray=False):
    """A dataset of serialized schedules: `weave_fn(weaver, example)` adds each
    example's computation to a Weaver of `loom` in a worker process.

    - examples: a sequence or iterable of picklable examples, or a Dataset
      (iterated as NumPy values).
    - weave_fn: a picklable (module-level) function; what it returns is the
      example's extra value, an element component when `extra_signature` (a
      structure of td.TensorSpec) is given, and dropped otherwise.
    - processes: worker processes (default: the CPU count).
    - ordered: schedules in the order of the examples; False hands each one
      over as soon as it is woven.
    - examples_per_schedule: examples woven into one Weaver (one schedule).
    - chunk_size: examples sent to a worker per task.
    - use_ray / ray_address: weave in Ray tasks instead (ray_weaving.py):
      with no address, the Ray of this process or a local one started with
      `processes` CPUs; given an address, that cluster.

    Elements are string scalars (or (schedule, extra) pairs): `.batch(k)`
    makes a vector that the loom merges into one run. Every schedule is
    checked against the loom's fingerprint; a weave_fn error raises
    WeaveError with the worker's traceback, and a worker that dies raises
    WorkerDiedError, never a hang."""
    return WovenDataset(examples, weave_fn, loom, processes, ordered, examples_per_schedule, chunk_size,
                        extra_signature, start_method, ray_address if use_ray or ray_address else None,
                        bool(use_ray or ray_address))


class WovenDataset(Dataset):
    def __init__(self, examples, weave_fn, loom, processes, ordered, examples_per_schedule, chunk_size,
                 extra_signature, start_method, ray_address, use_ray):
        if not isinstance(loom, Loom):
            raise TypeError(f"parallel_weave: `loom` must be a td.loom.Loom, got {type(loom).__name__}")
        if not callable(weave_fn):
            raise TypeError("parallel_weave: `weave_fn` must be callable")
        self._examples = examples
        self._weave_fn = weave_fn
        self._weaving_loom = loom.weaving_loom()
        self._fingerprint = loom.fingerprint
        self._processes = int(processes or os.cpu_count() or 1)
        self._ordered = bool(ordered)
        self._per_schedule = int(examples_per_schedule)
        self._chunk = max(1, int(chunk_size)) * self._per_schedule
        if self._processes < 1 or self._per_schedule < 1:
            raise ValueError("parallel_weave: processes and examples_per_schedule must be positive")
        self._extra_signature = extra_signature
        schedule_spec = TensorSpec([], dtypes.string)
        self._spec = schedule_spec if extra_signature is None else (schedule_spec, extra_signature)
        self._start_method = start_method
        self._use_ray = use_ray
        self._ray_address = ray_address
        self._pool = None

    def _cardinality(self):
        try:
            n = len(self._examples)
        except TypeError:
            return UNKNOWN_CARDINALITY
        return -(-n // self._per_schedule)

    def _chunks(self):
        source = self._examples.as_numpy_iterator() if isinstance(self._examples, Dataset) else self._examples
        chunk, first = [], 0
        for example in source:
            chunk.append(example)
            if len(chunk) == self._chunk:
                yield first, chunk
                first += len(chunk)
                chunk = []
        if chunk:
            yield first, chunk

    def _executor(self):
        if self._use_ray:
            if self._pool is None:
                self._pool = RayExecutor(self._weaving_loom, self._weave_fn, self._ray_address, self._processes)
            return self._pool
        if self._pool is None:
            self._pool = worker_pools.track(concurrent.futures.ProcessPoolExecutor(
                self._processes, mp_context=multiprocessing.get_context(self._start_method),
                initializer=weaving.init_worker, initargs=(self._weaving_loom, self._weave_fn)))
        return self._pool

    def _cpp_stage(self):
        """Schedules alone: each chunk's schedules become one string vector,
        which a C++ unbatch stage splits. Making one string scalar per
        schedule in Python cost 12 us, most of what the consumer spent per
        schedule; with extras, elements are made one by one (_py_iter)."""
        if self._extra_signature is not None:
            return None
        return _core.data_unbatch(_core.data_python(self._schedule_vectors))

    def _schedule_vectors(self):
        for _, items in self._results():
            yield [constant(np.array([message for message, _ in items], dtype=object), dtype=dtypes.string)]

    def _py_iter(self):
        for first_and_items in self._results():
            yield from self._elements(first_and_items)

    def _results(self):
        """(first example, [(message, extra), ...]) of each chunk, in order
        when ordered, else as the workers finish them."""
        pool = self._executor()
        in_flight = collections.deque()
        window = 2 * self._processes
        try:
            for first, chunk in self._chunks():
                in_flight.append((self._submit(pool, first, chunk), first, chunk))
                while len(in_flight) >= window:
                    yield self._next_done(in_flight)
            while in_flight:
                yield self._next_done(in_flight)
        finally:
            for future, _, _ in in_flight:
                future.cancel()

    def _submit(self, pool, first, chunk):
        try:
            return pool.submit(weaving.weave_chunk, first, chunk, self._per_schedule)
        except concurrent.futures.process.BrokenProcessPool as e:  # a worker died before this chunk was sent
            raise self._died(e, first, chunk) from None

    def _died(self, error, first, chunk):
        if not self._use_ray:
            self._pool = None  # the next iteration starts a new pool
        return weaving.WorkerDiedError(
            f"parallel_weave: a worker {'(Ray task)' if self._use_ray else 'process'} died (killed or crashed) "
            f"while examples up to {first + len(chunk) - 1} were being woven; its work is lost "
            f"({type(error).__name__})")

    def _next_done(self, in_flight):
        if self._ordered:
            future, first, chunk = in_flight.popleft()
        else:
            done, _ = concurrent.futures.wait([f for f, _, _ in in_flight],
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            entry = next(e for e in in_flight if e[0] in done)
            in_flight.remove(entry)
            future, first, chunk = entry
        try:
            result = future.result()
        except (concurrent.futures.process.BrokenProcessPool,) + getattr(self._pool, "died_errors", ()) as e:
            raise self._died(e, first, chunk) from None
        return first, weaving.check_result(result, self._fingerprint, first, self._per_schedule)

    def _elements(self, first_and_items):
        _, items = first_and_items
        for message, extra in items:
            schedule = constant(np.array(message, dtype=object), dtype=dtypes.string)  # 4x faster than from bytes
            if self._extra_signature is None:
                yield [schedule]
            else:
                leaves = structure.flatten_like(self._extra_signature, extra)
                specs = structure.flat_specs(self._extra_signature)
                yield [schedule] + [convert_to_tensor(v, dtype=s.dtype) for v, s in zip(leaves, specs)]

    def close(self):
        """Stops the worker processes (also done when the dataset is collected):
        a worker still busy after a grace period (a hung weave_fn) is
        terminated, so close() returns."""
        if self._pool is not None and not self._use_ray:
            worker_pools.stop_pool(self._pool)
            self._pool = None

    def __del__(self):
        pool = self.__dict__.get("_pool")
        if pool is not None and not self.__dict__.get("_use_ray"):
            pool.shutdown(wait=False, cancel_futures=True)
