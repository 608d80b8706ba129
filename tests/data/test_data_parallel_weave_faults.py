"""parallel_weave under worker faults: each gives a Python error naming the
example, the worker and weave_fn in bounded time (a hung worker with
`timeout`), and a dataset dropped without close() leaves no worker process,
thread or file descriptor behind."""

import gc
import os
import threading
import weakref

import pytest

import treadle as td
import weave_helpers
from test_data_schedules import make_loom

parallel_weave = td.data.experimental.parallel_weave
FN = "weave_helpers.weave_{}"


@pytest.fixture(scope="module")
def loom():
    return make_loom()


def test_an_unpicklable_result_names_the_example_worker_and_function(loom):
    ds = parallel_weave(range(10), weave_helpers.weave_unpicklable_on_5, loom, processes=1, chunk_size=3)
    with pytest.raises(td.data.experimental.WeaveError,
                       match=r"weave_fn weave_helpers.weave_unpicklable_on_5 failed on example 5 in worker process "
                             r"\d+: it returned a lock that cannot be sent back.*cannot pickle"):
        list(ds)
    ds.close()


def test_a_raising_worker_names_the_function_and_worker(loom):
    ds = parallel_weave(range(10), weave_helpers.weave_fails_on_5, loom, processes=1, chunk_size=3)
    with pytest.raises(td.data.experimental.WeaveError,
                       match=r"(?s)weave_helpers.weave_fails_on_5 failed on example 5 in worker process \d+: KeyError"):
        list(ds)
    ds.close()


@pytest.mark.parametrize("weave_fn, how", [(weave_helpers.weave_exits_on_5, "exit status 3"),
                                            (weave_helpers.weave_dies_on_5, "killed by SIGKILL")])
def test_a_worker_that_exits_or_is_killed_is_named_with_its_examples(loom, weave_fn, how):
    ds = parallel_weave(range(10), weave_fn, loom, processes=1, chunk_size=3)
    with pytest.raises(td.data.experimental.WorkerDiedError,
                       match=rf"worker process \d+ \({how}\) died while weave_fn "
                             rf"weave_helpers.{weave_fn.__name__} was weaving examples 3 to 5"):
        list(ds)
    ds.close()


def test_a_hung_worker_times_out_and_the_dataset_can_be_iterated_again(loom):
    ds = parallel_weave(range(10), weave_helpers.weave_hangs_on_5, loom, processes=1, chunk_size=3, timeout=5)
    with pytest.raises(td.data.experimental.WorkerTimeoutError,
                       match=r"examples 3 to 5 with weave_fn weave_helpers.weave_hangs_on_5 within the timeout of 5 s"):
        list(ds)
    assert ds._pool is None  # the hung worker was ended
    with pytest.raises(td.data.experimental.WorkerTimeoutError):  # and a new pool serves the next iteration
        list(ds)
    ds.close()
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        parallel_weave(range(3), weave_helpers.weave_vector, loom, timeout=0)


def test_a_weave_fn_that_cannot_be_pickled_is_refused_at_once(loom):
    with pytest.raises(TypeError, match=r"weave_fn .*<lambda> cannot be sent to worker processes.*top level"):
        parallel_weave(range(3), lambda w, i: weave_helpers.weave_vector(w, i), loom, processes=1)


def _children():
    """The process ids of this process's children."""
    out = set()
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent = f.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if parent == str(os.getpid()):
            out.add(int(pid))
    return out


def _resource_tracker():
    """multiprocessing's resource tracker (one per process, started with the first pool), as a set."""
    from multiprocessing import resource_tracker
    pid = getattr(resource_tracker._resource_tracker, "_pid", None)
    return {pid} if pid else set()


def _wait_for(condition):
    """Waits (up to a minute, for a loaded machine) until `condition()` holds; returns it."""
    event = threading.Event()
    for _ in range(600):
        if condition():
            return True
        event.wait(0.1)
    return condition()


def test_dropped_datasets_and_iterators_release_their_workers(loom):
    before = _children()  # multiprocessing's resource tracker, and whatever earlier tests left
    threads, fds = threading.active_count(), len(os.listdir("/proc/self/fd"))
    refs = []
    for i in range(20):
        ds = parallel_weave(range(40), weave_helpers.weave_vector, loom, processes=1, chunk_size=2)
        it = iter(ds)
        next(it)  # workers started, chunks in flight
        refs.append(weakref.ref(ds))
        if i % 2:
            del it  # the dataset dropped after its iterator ...
        del ds  # ... or before it
        it = None
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    assert _wait_for(lambda: _children() - before <= _resource_tracker()), _children() - before
    assert _wait_for(lambda: threading.active_count() <= threads)
    assert _wait_for(lambda: len(os.listdir("/proc/self/fd")) <= fds + 2)  # + the resource tracker's pipe
