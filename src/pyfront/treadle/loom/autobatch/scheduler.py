"""Running the examples: each runs as a greenlet (plain Python, no async or
yield). An example that reads a value still to be computed switches back to
the scheduler; once every unfinished example waits, the scheduler runs the
round they wait for and resumes them. A greenlet switches stacks in C,
cheaply and without threads, which is why td.loom.autobatch uses it."""

import time

import greenlet

from treadle.loom.autobatch.rounds import run_round

_WAITING = object()


def run_examples(recorder, fn, examples, run_rounds=True):
    """fn(example) for every example of the iterable (each started as it is
    drawn from it), rounds run as examples wait; returns their results, in
    order. An exception in fn propagates with a note naming the example (its
    own traceback kept)."""
    main = greenlet.getcurrent()
    results = []

    def wait(value):
        main.switch(_WAITING)

    recorder.wait = wait
    waiting = []
    for i, example in enumerate(examples):
        results.append(None)
        _step(recorder, i, greenlet.greenlet(_starter(fn, example), parent=main), results, waiting)
    while waiting:
        if not run_rounds:
            raise ValueError(f"td.loom.autobatch: example {waiting[0][0]} reads a computed value; a recording "
                             "for a td.function must compute without reading values (call the autobatched "
                             "function itself instead)")
        run_round(recorder)
        runnable, waiting = waiting, []
        for i, g in runnable:
            _step(recorder, i, g, results, waiting)
    return results


def _step(recorder, i, g, results, waiting):
    """Runs example i until it finishes (its result kept) or waits (kept in `waiting`)."""
    recorder.current = i
    t0 = time.perf_counter()
    try:
        out = g.switch()
    except Exception as e:
        e.add_note(f"(raised by td.loom.autobatch's function on example {i})")
        raise
    finally:
        recorder.current = None
        recorder.recording_seconds += time.perf_counter() - t0
    if g.dead:
        results[i] = out
    else:
        waiting.append((i, g))


def _starter(fn, example):
    def start():
        return fn(example)
    return start
