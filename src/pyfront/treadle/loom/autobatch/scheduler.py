"""Running the examples: each runs in a greenlet (plain Python, no async or
yield). An example that reads a value still to be computed switches back to
the scheduler; once every unfinished example waits, the scheduler runs the
round they wait for and resumes them. A greenlet switches stacks in C,
cheaply and without threads, which is why td.loom.autobatch uses it.

A greenlet whose example finished runs the next example: making a greenlet
(and the interpreter's frame stack it needs) costs several times a switch,
and most examples finish without waiting."""

import time

import greenlet

from treadle.loom.autobatch._record import WAITING as _WAITING
from treadle.loom.autobatch.rounds import run_round
from treadle.loom.autobatch.stack_switch import after_switch


def run_examples(recorder, fn, examples):
    """fn(example) for every example of the iterable (each started as it is
    drawn from it), rounds run as examples wait; returns their results, in
    order. An exception in fn propagates with a note naming the example (its
    own traceback kept)."""
    main = greenlet.getcurrent()
    results = []

    def wait(value):
        main.switch(_WAITING)
        if after_switch is not None:
            after_switch()

    recorder.wait = wait
    recorder.switch_to_scheduler = main.switch  # a value read in C waits without wait()'s frame
    waiting, idle = [], []
    for i, example in enumerate(examples):
        results.append(None)
        g = idle.pop() if idle else greenlet.greenlet(_runner(fn, main), parent=main)
        _switch_each(recorder, ((i, g, example),), results, waiting, idle)
    while waiting:
        run_round(recorder)
        runnable, waiting = waiting, []
        _switch_each(recorder, ((i, g, None) for i, g in runnable), results, waiting, idle)
    return results


def _switch_each(recorder, steps, results, waiting, idle):
    """Switches to each example of `steps` ((i, greenlet, what to send it):
    the example to start on, or None to resume) until it finishes (its
    result kept, the greenlet idle) or waits (kept in `waiting`). A round
    resumes thousands of examples in this one loop: a call per example costs
    about as much as the switch."""
    t0 = time.perf_counter()
    i = None
    try:
        for i, g, sent in steps:
            recorder.current = i
            try:
                out = g.switch(sent)
            finally:
                if after_switch is not None:
                    after_switch()
            if out is _WAITING:
                waiting.append((i, g))
            else:
                results[i] = out[0]
                idle.append(g)
    except Exception as e:
        e.add_note(f"(raised by td.loom.autobatch's function on example {i})")
        raise
    finally:
        recorder.current = None
        recorder.recording_seconds += time.perf_counter() - t0


def _runner(fn, main):
    """A greenlet's function: fn of each example it is given, the result
    handed back (in a 1-tuple, never the waiting marker) before the next."""
    def run(example):
        while True:
            if after_switch is not None:
                after_switch()
            example = main.switch((fn(example),))
    return run
