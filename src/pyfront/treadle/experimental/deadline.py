"""td.experimental.deadline: a time limit for the runs a block starts.

    with td.experimental.deadline(2.5):
        result = long_running_function(x)   # DeadlineExceededError after 2.5 s

Every run started from this thread inside the block (a td.function call, an
eager op, a loom run, a loaded function) stops with
td.errors.DeadlineExceededError once the deadline passes. The runtime checks
between the steps of a graph, the iterations of a While loop and the layer
ops of a loom, so a run stops within one step of the deadline; a single long
kernel (one huge matmul) finishes first. Deadlines nest: an inner block
cannot extend an outer one. Ctrl-C stops the same runs with
KeyboardInterrupt, with or without a deadline."""

import contextlib
import math

from treadle import _core


@contextlib.contextmanager
def deadline(seconds):
    """Runs started in the block stop with DeadlineExceededError after `seconds`."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds) or seconds < 0:
        raise ValueError(f"deadline: seconds must be a number >= 0, got {seconds!r}")
    at = _core.monotonic_ns() + max(1, int(min(seconds, 1e9) * 1e9))
    previous = _core.set_deadline(0)
    _core.set_deadline(at if previous == 0 else min(previous, at))
    try:
        yield
    finally:
        _core.set_deadline(previous)
