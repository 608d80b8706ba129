"""td.loom.autobatch: plain per-example Python, batched by the Loom.

`td.loom.autobatch(fn)(examples)` runs `fn(example)` for every example and
batches the tensor work of all of them:

- Recording. Inside `fn`, tensors computed from the example are per-example
  values. A td.function called with them is one node of the schedule (one
  LoomOp per function and per-example input signature, traced once); a plain
  op on them is a node too (one LoomOp per op, attributes and signature);
  `td.gather(variable, id)` with a known id is a row of the variable (all of
  them one gather); constants are rows of a batch input. A cell called with
  Python lists of values (a child-sum TreeLSTM's children) is recorded from
  a key of their signature numbers (one op per list length). Each batched
  op runs its per-example computation through `td.vectorized_map`; a
  cell's trace first has its products by one shared matrix stacked into
  one (horizontal_fusion.py: a loop over a list argument, unrolled).
- Scheduling. Nodes are woven in one bulk call per round and run by the
  Loom in depth order: each op once per depth on all its calls there; a
  value used twice is computed once. `autobatch(fn, schedule="agenda")`
  runs DyNet's agenda order instead (pass-throughs delay the calls it
  launches later); `launch_counts` compares the orders' batched launches.
- Values mid-computation. Each example runs as a greenlet. Reading a value
  (`float(p)`, `bool(p > 0.5)`, `p.numpy()`, an `if` or `while` on it)
  suspends that example; once every unfinished example waits or is done,
  the recorded work runs as one round and they resume. Values a later round
  reads come from the store of earlier rounds' results: per type shape one
  NumPy array that rounds append to and read whole, without a copy; under
  a tape, each round's rows stay the tensor its LoomRun returned, and a
  round's batch input gathers only the stored rows it reads (store.py).
- Gradients. Under a td.GradientTape, the rounds run unseen by the tape,
  and then all their work once more as one LoomRun the tape records
  (replay.py), whose inputs are the variables' values: the tape gives
  gradients to every variable `fn` reads, through every round; rows of a
  variable get a td.IndexedSlices gradient.
- Training. The per-example Python runs at every step (it decides the
  schedule, as weaving does). The rest of the step (loss, gradients,
  optimizer) can be a td.function that takes the recorded work as an
  argument: `autobatched.record(examples)` runs the examples and returns a
  `Recording` (not run). Passed to a td.function, it traces as its plan
  (the loom and where its batch inputs come from) and arrives as tensors:
  the schedule as a string tensor (as a Weaver does), the constants' rows,
  the variables' row ids and the outputs' rows; there `recording.outputs()`
  runs the loom and returns fn's outputs stacked, so the function is traced
  once for all batches. Examples that read values are run by rounds first,
  as in a call; the recording then holds all the work of every round
  (replay.py), with the decisions the reads made fixed:

      @td.function
      def train_step(recording, labels):
          with td.GradientTape() as tape:
              loss = loss_of(recording.outputs(), labels)
          grads = tape.gradient(loss, variables)
          optimizer.apply_gradients(zip(grads, variables))
          return loss

      train_step(batched.record(trees), labels)
"""

import gc
import threading

from treadle.framework import context, op_execution, tensor, variables
from treadle.function import polymorphic_function
from treadle.ops import array_ops
from treadle.loom.autobatch._record import CallHook, ConstantHook, GatherHook, OperandHook, ReadHook, Value
from treadle.loom.autobatch.outputs import check_results, stacked_outputs
from treadle.loom.autobatch.recorded import Recording, make_recording
from treadle.loom.autobatch.recording import CrossExampleError, Recorder
from treadle.loom.autobatch.registry import Registry
from treadle.loom.autobatch.replay import Replay
from treadle.loom.autobatch.rounds import plan_round, replayed_round, run_replay, run_round
from treadle.loom.autobatch.scheduler import run_examples
from treadle.loom.autobatch.schedule_stats import launch_counts
from treadle.util import nest

_active = []  # the recorder of the autobatched call running now (one at a time)
_one_at_a_time = threading.Lock()


class AutoBatched:
    """What td.loom.autobatch(fn) returns: call it on an iterable of examples."""

    def __init__(self, fn, schedule="depth"):
        if not callable(fn):
            raise TypeError(f"td.loom.autobatch takes a function, got {fn!r}")
        if schedule not in ("depth", "agenda"):
            raise ValueError(f"td.loom.autobatch: schedule must be 'depth' or 'agenda', got {schedule!r}")
        self._fn = fn
        self.schedule = schedule
        self._registry = Registry()
        self.last_stats = None  # per round of the last call: {"nodes", "loom_depth", ...}
        self.count_launches = False  # True: last_stats also give launch_counts of each round
        self.last_recording_seconds = None  # how long the last call's examples ran (recording)
        self._plans = {}  # Recording plans by key: one object (one td.function trace) per plan
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
        """fn's outputs for every example, each leaf stacked along a new axis 0."""
        return self._run(examples, self._finish_call)

    def record(self, examples):
        """Runs fn on every example and returns the recorded work, not run:
        a Recording, to pass to a td.function that calls its `outputs()`
        (see the module's docstring). Values the examples read are computed
        now, by rounds; the recording holds all the work, theirs included."""
        return self._run(examples, self._finish_recording)

    def _finish_call(self, recorder, results):
        if recorder.replay is not None:  # the whole graph, once, where the tape sees it
            run_replay(recorder, _values_of(results))
        else:
            run_round(recorder)  # what the finished examples' outputs still need
        return stacked_outputs(recorder, results)

    def _finish_recording(self, recorder, results):
        check_results(results)
        live = replayed_round(recorder, _values_of(results))
        if not len(recorder.round):
            raise ValueError("td.loom.autobatch: the examples recorded no batched work to run")
        return make_recording(recorder, plan_round(recorder, False, live), results, self._plans)

    def _run(self, examples, finish):
        if context.graph_being_built() is not None:
            raise RuntimeError("td.loom.autobatch runs its examples eagerly (their Python decides the schedule); "
                               "inside a td.function, pass it `autobatched.record(examples)` made outside and "
                               "call the recording's outputs() there")
        if _active and _active[0].thread == threading.get_ident():
            raise RuntimeError("td.loom.autobatch: an autobatched function was called inside another's "
                               "per-example function; call it on its own")
        # Recording makes many small objects that live until the round runs;
        # the cyclic collector would scan them again and again (about a fifth
        # of the recording time) and find no garbage (the round breaks the one
        # cycle, values -> recorder -> round), so it waits meanwhile, and until
        # the call's recorder and values are freed: they then no longer count
        # towards its next collection, which would scan them all once more.
        with _one_at_a_time:  # the recording hooks are the process's: calls of other threads wait
            collecting = gc.isenabled()
            gc.disable()
            try:
                return self._record_and_finish(examples, finish)
            finally:
                if collecting:
                    gc.enable()

    def _record_and_finish(self, examples, finish):
        recorder = Recorder(self._registry)
        recorder.count_launches = self.count_launches
        recorder.schedule = self.schedule
        if finish == self._finish_recording or op_execution.op_recorders:
            recorder.replay = Replay()  # the rounds run unseen by tapes, then all their work as one graph
        _active.append(recorder)
        hook = CallHook(recorder)
        polymorphic_function.call_interceptors.append(hook)
        read_hook = ReadHook(recorder)
        variables.read_overrides.append(read_hook)
        gather_hook = GatherHook(recorder)
        array_ops.gather_interceptors.append(gather_hook)
        constant_hook = ConstantHook(recorder)
        tensor.constant_interceptors.append(constant_hook)
        operand_hook = OperandHook(recorder)
        tensor.operand_interceptors.append(operand_hook)
        try:
            results = run_examples(recorder, self._fn, examples)
            out = finish(recorder, results)
        finally:
            tensor.operand_interceptors.remove(operand_hook)
            tensor.constant_interceptors.remove(constant_hook)
            array_ops.gather_interceptors.remove(gather_hook)
            variables.read_overrides.remove(read_hook)
            polymorphic_function.call_interceptors.remove(hook)
            _active.remove(recorder)
            recorder.finish()
        self.last_stats = list(recorder.stats)
        self.last_recording_seconds = recorder.recording_seconds
        return out

    def __repr__(self):
        return f"<td.loom.autobatch of {self.__name__}: {len(self._registry.ops)} batched ops>"


def _values_of(results):
    """The values among the examples' outputs (every leaf)."""
    return [v for r in results for v in nest.flatten(r) if type(v) is Value]


def autobatch(fn, schedule="depth"):
    """Returns a callable running `fn` on every example of an iterable and
    batching their tensor work through the Loom (see the module's docstring).
    `schedule`: "depth" (the default: each op once per depth, the fast path
    for trees) or "agenda" (DyNet's order, for DAGs and mixed cells whose
    calls interleave at different depths; see agenda.py)."""
    return AutoBatched(fn, schedule)


__all__ = ["autobatch", "AutoBatched", "CrossExampleError", "Recording", "launch_counts"]
