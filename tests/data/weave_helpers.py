"""Weave functions run by worker processes in the parallel weaving tests
(module-level, so that spawned workers can import them)."""

import os
import signal

import numpy as np


def weave_vector(weaver, i):
    """x + i + i, at depth 2; returns the example as its extra value."""
    c = weaver(np.full(3, float(i)))
    weaver.add_output(weaver.add(weaver.add(weaver.x, c), c))
    return i


def weave_fails_on_5(weaver, i):
    if i == 5:
        raise KeyError(f"no tree for example {i}")
    return weave_vector(weaver, i)


def weave_dies_on_5(weaver, i):
    if i == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return weave_vector(weaver, i)


def weave_with_pid(weaver, i):
    weave_vector(weaver, i)
    return os.getpid()


def weave_slowly(weaver, i):
    """weave_vector, after 1.5 s for every example but the first."""
    if i > 0:
        import time
        time.sleep(1.5)
    return weave_vector(weaver, i)


def weave_unpicklable_on_5(weaver, i):
    """Returns a lock (which cannot be pickled) for example 5."""
    weave_vector(weaver, i)
    if i == 5:
        import threading
        return threading.Lock()
    return i


def weave_exits_on_5(weaver, i):
    if i == 5:
        os._exit(3)
    return weave_vector(weaver, i)


def weave_hangs_on_5(weaver, i):
    if i == 5:
        import time
        time.sleep(3600)
    return weave_vector(weaver, i)
