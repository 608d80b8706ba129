"""Stopping a pool of worker processes in bounded time, at close() and at
interpreter exit, whatever its workers are doing.

ProcessPoolExecutor.shutdown(wait=True) and concurrent.futures' own exit
hook wait for every running task: a weave function that never returns would
keep close() and the interpreter's exit waiting forever. Here pending tasks
are cancelled, idle workers are let go, and a worker still busy after a grace
period is terminated (then killed), so that the executor's manager thread
ends and nothing is left to wait for."""

import concurrent.futures.process  # noqa: F401 - its exit hook is registered before ours (see the end)
import threading
import time
import weakref

GRACE_S = 2.0  # how long a busy worker may finish its task before it is terminated

_live = weakref.WeakSet()


def track(pool):
    """Registers `pool` (a ProcessPoolExecutor) to be stopped at interpreter exit."""
    _live.add(pool)
    return pool


def stop_pool(pool, grace_s=GRACE_S):
    """Stops `pool` and its processes: returns within about 2 * grace_s + 2
    seconds, even when a worker hangs."""
    _live.discard(pool)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace_s
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join(1.0)
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None and manager is not threading.current_thread():
        manager.join(grace_s)  # it ends once its processes have


def _stop_live_pools():
    for pool in list(_live):
        stop_pool(pool)


# threading's exit hooks run before concurrent.futures joins its manager
# threads (in reverse order of registration: this module is imported after
# concurrent.futures.process, so this runs first).
threading._register_atexit(_stop_live_pools)
