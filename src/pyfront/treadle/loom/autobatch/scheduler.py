"""Running the examples: each runs as a greenlet (plain Python, no async or
yield). An example that reads a value still to be computed switches back to
the scheduler; once every unfinished example waits, the scheduler runs the
round they wait for and resumes them. A greenlet switches stacks in C,
cheaply and without threads, which is why td.loom.autobatch uses it."""

import greenlet

from treadle.loom.autobatch.rounds import run_round

_WAITING = object()


def run_examples(recorder, fn, examples):
    """fn(example) for every example, rounds run as examples wait; returns
    their results, in order. An exception in fn propagates with a note naming
    the example (its own traceback kept)."""
    main = greenlet.getcurrent()
    results = [None] * len(examples)

    def wait(value):
        if greenlet.getcurrent() is main:
            raise RuntimeError("td.loom.autobatch: a value was read outside an example")
        main.switch(_WAITING)

    recorder.wait = wait
    runnable = [(i, greenlet.greenlet(_starter(fn, example), parent=main)) for i, example in enumerate(examples)]
    while runnable:
        waiting = []
        for i, g in runnable:
            recorder.current = i
            try:
                out = g.switch()
            except BaseException as e:
                if isinstance(e, Exception):
                    e.add_note(f"(raised by td.loom.autobatch's function on example {i})")
                raise
            finally:
                recorder.current = None
            if g.dead:
                results[i] = out
            else:
                waiting.append((i, g))
        if waiting:
            run_round(recorder)
        runnable = waiting
    return results


def _starter(fn, example):
    def start():
        return fn(example)
    return start
