"""Weaving loom schedules in worker processes: the consumer hands chunks of
examples to a pool, each worker runs a Python weave function with a Weaver of
its own copy of the loom's description, and the serialized schedules stream
back as a dataset of string scalars (batch them to merge k into one run).

The worker side (_WorkerState, weave_chunk) is plain Python with no process
machinery, so other executors (Ray, ray_weaving.py) run the same code."""

import os
import pickle
import signal
import traceback

from treadle import errors, loom_pb2


class WeaveError(RuntimeError):
    """weave_fn raised in a worker; the message carries the worker's traceback."""


class WorkerDiedError(RuntimeError):
    """A worker process ended while it had examples to weave (killed or crashed)."""


class WorkerTimeoutError(RuntimeError):
    """No woven chunk came back within parallel_weave's `timeout` (a hung weave_fn)."""


def function_name(fn):
    """How errors name a weave function: its module and qualified name."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module else name


# ------------------------------------------------------------------ worker side
_state = None


class _WorkerState:
    def __init__(self, loom, weave_fn, dumps=pickle.dumps, worker=None):
        self.loom = loom
        self.weave_fn = weave_fn
        self.dumps = dumps  # how the result travels back: what it must be able to serialize
        self.worker = worker or f"worker process {os.getpid()}"


# Extra values of these types always pickle; anything else is tried first, so
# that one that cannot is reported with its example, not as the chunk's
# transport failing.
_PICKLABLE = (type(None), bool, int, float, str, bytes)


def _always_picklable(value):
    # NumPy arrays and scalars of non-object dtypes (the common extra value)
    return isinstance(value, _PICKLABLE) or getattr(getattr(value, "dtype", None), "hasobject", True) is False


def init_worker(loom, weave_fn):
    """Process initializer: the loom arrives pickled as its weaving-only
    description. Ctrl-C in a terminal reaches the whole process group; the
    consumer handles it (its iteration stops, dropping the iterator cancels
    the chunks not started), so workers ignore it: they finish the chunk in
    hand and the pool serves the dataset's next iteration."""
    global _state
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _state = _WorkerState(loom, weave_fn)


def weave_chunk(first_index, examples, examples_per_schedule, state=None):
    """Weaves `examples` (numbered from first_index), examples_per_schedule per
    schedule. Returns ("ok", [(message, extra), ...]) or ("error", index,
    worker, description with the traceback): errors travel as text, so an
    exception that cannot be pickled is still reported, and so is a return
    value that cannot."""
    state = state or _state
    out = []
    for start in range(0, len(examples), examples_per_schedule):
        group = examples[start:start + examples_per_schedule]
        weaver = state.loom.make_weaver()
        extras = []
        for k, example in enumerate(group):
            try:
                extra = state.weave_fn(weaver, example)
            except BaseException as e:  # noqa: B902 - reported to the consumer with its traceback
                return ("error", first_index + start + k, state.worker,
                        f"{type(e).__name__}: {e}\n\nWorker traceback:\n{traceback.format_exc()}")
            if not _always_picklable(extra):
                try:
                    state.dumps(extra)
                except Exception as e:  # noqa: BLE001 - pickle raises TypeError, AttributeError, PicklingError...
                    return ("error", first_index + start + k, state.worker,
                            f"it returned a {type(extra).__name__} that cannot be sent back to the consumer "
                            f"({type(e).__name__}: {e}); return picklable values (NumPy arrays, numbers, tuples)")
            extras.append(extra)
        extra = extras[0] if examples_per_schedule == 1 else extras
        out.append((weaver.serialize(), extra))
    return ("ok", out)


# ------------------------------------------------------------------ consumer side
def fingerprint_of(message):
    """The loom fingerprint a serialized WeaverMessage carries (field 1, fixed64)."""
    if len(message) >= 9 and message[0] == 0x09:  # written first by the C++ Weaver
        return int.from_bytes(message[1:9], "little")
    m = loom_pb2.WeaverMessage()
    m.ParseFromString(message)
    return m.loom_fingerprint


def check_result(result, loom_fingerprint, first_index, examples_per_schedule, weave_fn_name="weave_fn"):
    """The messages and extras of a chunk's result, each schedule checked
    against the consumer's loom; WeaveError for a worker's failure."""
    if result[0] == "error":
        _, index, worker, description = result
        raise WeaveError(f"parallel_weave: weave_fn {weave_fn_name} failed on example {index} in {worker}: "
                         f"{description}")
    # The C++ Weaver writes the fingerprint first: comparing those 9 bytes is
    # the whole check for its messages (decoding it took 40% of the consumer's
    # time per schedule); anything else is decoded to say what it carries.
    expected = b"\x09" + loom_fingerprint.to_bytes(8, "little")
    for k, (message, _) in enumerate(result[1]):
        if message[:9] == expected:
            continue
        fp = fingerprint_of(message)
        if fp != loom_fingerprint:
            raise errors.InvalidArgumentError(
                None, None, f"parallel_weave: the schedule of example {first_index + k * examples_per_schedule} "
                            f"was made for another loom (fingerprint {fp}; this loom's is {loom_fingerprint})")
    return result[1]
