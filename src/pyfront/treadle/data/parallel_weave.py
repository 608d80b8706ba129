"""td.data.experimental.parallel_weave: a dataset of schedules woven by a
Python weave function in a pool of worker processes (or Ray tasks)."""

import collections
import concurrent.futures
import concurrent.futures.process
import functools
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import time
import weakref

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
                   use_ray=False, timeout=None):
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
    - timeout: seconds the consumer waits for the next woven chunk (None:
      without limit); past it, the workers are stopped and
      WorkerTimeoutError names the examples and weave_fn (a hung weave_fn).

    Elements are string scalars (or (schedule, extra) pairs): `.batch(k)`
    makes a vector that the loom merges into one run. Every schedule is
    checked against the loom's fingerprint; a weave_fn error (or a return
    value that cannot be sent back) raises WeaveError naming the example, the
    worker and weave_fn, with the worker's traceback, and a worker that dies
    raises WorkerDiedError, never a hang. The workers stop with close(), or
    when the dataset is collected."""
    return WovenDataset(examples, weave_fn, loom, processes, ordered, examples_per_schedule, chunk_size,
                        extra_signature, start_method, ray_address if use_ray or ray_address else None,
                        bool(use_ray or ray_address), timeout)


class _Workers:
    """A WovenDataset's executor, held apart from the dataset so that a
    weakref finalizer can stop it when the dataset is collected without
    close() (the executor must not refer to the dataset)."""

    def __init__(self):
        self.pool = None
        # The pool's worker processes as they appear: once a worker dies the
        # pool may drop its table before we ask which process it was.
        self.seen = {}

    def note_processes(self):
        self.seen.update(getattr(self.pool, "_processes", None) or {})

    def stop(self, wait=True):
        """Stops the pool: waits for the chunks in hand, or (wait=False: the
        results are no longer wanted, or a worker hangs) ends the worker
        processes at once, so that none outlives the dataset. Returns the
        process ids it killed."""
        self.note_processes()
        pool, self.pool = self.pool, None
        if pool is None:
            return set()
        if isinstance(pool, RayExecutor):
            pool.cancel_all()
            return set()
        processes = list(self.seen.values())
        self.seen = {}
        if wait:  # bounded: a worker still busy after a grace period is terminated
            worker_pools.stop_pool(pool)
            return set()
        pool.shutdown(wait=False, cancel_futures=True)
        killed = set()
        for process in processes:
            if process.is_alive():
                process.kill()
                killed.add(process.pid)
        pool.shutdown(wait=True)
        return killed


def _check_picklable(weave_fn, name):
    """Worker processes receive weave_fn pickled (by reference to its module
    and name): say so here, not as a bare PicklingError at the first chunk."""
    try:
        pickle.dumps(weave_fn)
    except Exception as e:  # noqa: BLE001 - PicklingError, AttributeError, TypeError...
        raise TypeError(f"parallel_weave: weave_fn {name} cannot be sent to worker processes ({type(e).__name__}: "
                        f"{e}); define it at the top level of a module (not a lambda or a nested function), "
                        "or weave in Ray tasks (use_ray=True), which send closures") from None


def _dead_workers(processes, ended_by_us):
    """'worker process <pid> (how it ended)' for the processes of a broken
    pool (stopped: their exit statuses are known) that ended by themselves:
    not those the pool terminated (SIGTERM) or we killed, or None."""
    dead = []
    for process in processes:
        code = process.exitcode
        if code is not None and code != -signal.SIGTERM and process.pid not in ended_by_us:
            how = f"exit status {code}" if code >= 0 else f"killed by {_signal_name(-code)}"
            dead.append(f"worker process {process.pid} ({how})")
    return " and ".join(dead) or None


def _await_exit_codes(processes, seconds=1.0):
    """Lets the processes of a broken pool end and their exit codes be known.

    The pool sees a worker's pipe close before the process has ended: join
    each one (a second at most) before the others are killed. The pool's own
    thread joins them too, and when it reaps a process between our wait and
    our waitpid, the exit code is unknown to us until that thread records
    it: poll for it a little longer."""
    deadline = time.monotonic() + seconds
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    deadline += seconds
    while time.monotonic() < deadline and any(p.exitcode is None and _has_ended(p) for p in processes):
        time.sleep(0.005)


def _has_ended(process):
    try:
        return bool(multiprocessing.connection.wait([process.sentinel], 0))
    except (ValueError, OSError):  # closed: nothing more to learn from it
        return False


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _schedule_vectors_of(dataset_ref):
    """The C++ stage's Python source: it holds the dataset weakly, as the
    dataset holds the stage (a cycle through C++ is never collected)."""
    return dataset_ref()._schedule_vectors()


class WovenDataset(Dataset):
    def __init__(self, examples, weave_fn, loom, processes, ordered, examples_per_schedule, chunk_size,
                 extra_signature, start_method, ray_address, use_ray, timeout=None):
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
        self._timeout = None if timeout is None else float(timeout)
        if self._timeout is not None and not self._timeout > 0:
            raise ValueError(f"parallel_weave: timeout must be a positive number of seconds, got {timeout!r}")
        self._weave_fn_name = weaving.function_name(weave_fn)
        if not use_ray and start_method != "fork":  # forked workers inherit it instead
            _check_picklable(weave_fn, self._weave_fn_name)
        self._workers = _Workers()
        weakref.finalize(self, self._workers.stop, False)

    @property
    def _pool(self):
        return self._workers.pool

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
        if self._workers.pool is None:
            if self._use_ray:
                self._workers.pool = RayExecutor(self._weaving_loom, self._weave_fn, self._ray_address,
                                                 self._processes)
            else:
                self._workers.pool = worker_pools.track(concurrent.futures.ProcessPoolExecutor(
                    self._processes, mp_context=multiprocessing.get_context(self._start_method),
                    initializer=weaving.init_worker, initargs=(self._weaving_loom, self._weave_fn)))
        return self._workers.pool

    def _cpp_stage(self):
        """Schedules alone: each chunk's schedules become one string vector,
        which a C++ unbatch stage splits. Making one string scalar per
        schedule in Python cost 12 us, most of what the consumer spent per
        schedule; with extras, elements are made one by one (_py_iter)."""
        if self._extra_signature is not None:
            return None
        return _core.data_unbatch(_core.data_python(functools.partial(_schedule_vectors_of, weakref.ref(self))))

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
            future = pool.submit(weaving.weave_chunk, first, chunk, self._per_schedule)
            self._workers.note_processes()
            return future
        except concurrent.futures.process.BrokenProcessPool as e:  # a worker died before this chunk was sent
            raise self._died(e, first, chunk) from None

    def _worker_kind(self):
        return "Ray task" if self._use_ray else "worker process"

    def _died(self, error, first, chunk):
        who = f"a {self._worker_kind()} (killed or crashed)"
        if not self._use_ray:
            self._workers.note_processes()
            processes = list(self._workers.seen.values())
            _await_exit_codes(processes)
            ended_by_us = self._workers.stop(wait=False)  # the next iteration starts a new pool
            who = _dead_workers(processes, ended_by_us) or who
        return weaving.WorkerDiedError(
            f"parallel_weave: {who} died while weave_fn {self._weave_fn_name} "
            f"was weaving examples {first} to {first + len(chunk) - 1}; its work is lost ({type(error).__name__}: "
            f"{error})")

    def _timed_out(self, first, chunk):
        self._workers.stop(wait=False)  # a hung worker never finishes: the next iteration starts new ones
        return weaving.WorkerTimeoutError(
            f"parallel_weave: no {self._worker_kind()} finished weaving examples {first} to {first + len(chunk) - 1} "
            f"with weave_fn {self._weave_fn_name} within the timeout of {self._timeout:g} s; the workers were "
            "stopped (is weave_fn stuck?)")

    def _next_done(self, in_flight):
        if self._ordered:
            future, first, chunk = in_flight[0]
        else:
            done, _ = concurrent.futures.wait([f for f, _, _ in in_flight], timeout=self._timeout,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            if not done:
                future, first, chunk = in_flight[0]
                raise self._timed_out(first, chunk)
            future, first, chunk = next(e for e in in_flight if e[0] in done)
        try:
            result = future.result(timeout=self._timeout)
        except concurrent.futures.TimeoutError:
            raise self._timed_out(first, chunk) from None
        except (concurrent.futures.process.BrokenProcessPool,) + getattr(self._pool, "died_errors", ()) as e:
            raise self._died(e, first, chunk) from None
        finally:
            if future.done():
                in_flight.remove((future, first, chunk))
        return first, weaving.check_result(result, self._fingerprint, first, self._per_schedule,
                                           self._weave_fn_name)

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
        self._workers.stop(wait=True)
