"""td.loom.autobatch: plain per-example Python, batched by the Loom.

`td.loom.autobatch(fn)(examples)` runs `fn(example)` for every example and
batches the tensor work of all of them:

- Recording. Inside `fn`, tensors computed from the example are per-example
  values. A td.function called with them is one node of the schedule (one
  LoomOp per function and per-example input signature, traced once); a plain
  op on them is a node too (one LoomOp per op, attributes and signature);
  `td.gather(variable, id)` with a known id is a row of the variable (all of
  them one gather); constants are rows of a batch input. Each batched op runs
  its per-example computation through `td.vectorized_map`.
- Scheduling. Nodes are woven in one bulk call per round and run by the
  Loom in depth order: each op once per depth on all its calls there; a
  value used twice is computed once.
- Values mid-computation. Each example runs as a greenlet. Reading a value
  (`float(p)`, `bool(p > 0.5)`, `p.numpy()`, an `if` or `while` on it)
  suspends that example; once every unfinished example waits or is done,
  the recorded work runs as one round and they resume. Values a later round
  reads come from the store of earlier rounds' results (batch inputs).
- Gradients. Every round is an eager LoomRun whose inputs are the variables'
  values and the store, so a td.GradientTape around the call gives gradients
  to every variable `fn` reads, through every round; rows of a variable get
  a td.IndexedSlices gradient.
- Training. The per-example Python runs at every step (it decides the
  schedule, as weaving does). Keep the rest of the step (loss, gradients,
  optimizer) in a td.function: `autobatched.record(examples)` returns a
  `Recording` whose `schedule` (serialized WeaverMessage bytes: a string
  tensor as an argument, so the td.function is traced once) and
  `outputs(schedule)` (callable inside a td.function) run the recorded work
  there; this needs a function that reads no value mid-computation (one
  round).
"""

from treadle.framework import variables
from treadle.function import polymorphic_function
from treadle.loom.autobatch.outputs import stacked_outputs
from treadle.loom.autobatch.recording import CrossExampleError, Recorder
from treadle.loom.autobatch.registry import Registry
from treadle.loom.autobatch.rounds import run_round
from treadle.loom.autobatch.scheduler import run_examples
from treadle.loom.autobatch.schedule_stats import launch_counts

_active = []  # the recorder of the autobatched call running now (one at a time)


class AutoBatched:
    """What td.loom.autobatch(fn) returns: call it on an iterable of examples."""

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"td.loom.autobatch takes a function, got {fn!r}")
        self._fn = fn
        self._registry = Registry()
        self.last_stats = None  # per round of the last call: {"nodes", "loom_depth", ...}
        self.count_launches = False  # True: last_stats also give launch_counts of each round
        self.__name__ = getattr(fn, "__name__", "autobatched")
        self.__doc__ = getattr(fn, "__doc__", None)

    @property
    def python_function(self):
        return self._fn

    @property
    def loom(self):
        """The loom of every op recorded so far."""
        return self._registry.loom()

    def __call__(self, examples):
        if _active:
            raise RuntimeError("td.loom.autobatch: an autobatched function was called inside another's "
                               "per-example function; call it on its own")
        recorder = Recorder(self._registry)
        recorder.count_launches = self.count_launches
        _active.append(recorder)
        polymorphic_function.call_interceptors.append(recorder.call)
        variables.read_overrides.append(recorder.read_override)
        try:
            results = run_examples(recorder, self._fn, examples)
            run_round(recorder)  # what the finished examples' outputs still need
            out = stacked_outputs(recorder, results)
        finally:
            variables.read_overrides.remove(recorder.read_override)
            polymorphic_function.call_interceptors.remove(recorder.call)
            _active.remove(recorder)
            recorder.finished = True
        self.last_stats = list(recorder.stats)
        return out

    def __repr__(self):
        return f"<td.loom.autobatch of {self.__name__}: {len(self._registry.ops)} batched ops>"


def autobatch(fn):
    """Returns a callable running `fn` on every example of an iterable and
    batching their tensor work through the Loom (see the module's docstring)."""
    return AutoBatched(fn)


__all__ = ["autobatch", "AutoBatched", "CrossExampleError", "launch_counts"]
