"""TensorFlow's "excessive retracing" warning, for td.function: it appears when
a function traced THRESHOLD times within its last WINDOW eager calls (at most
MAX_WARNINGS times per function), or when
THRESHOLD td.functions were made of one Python function and each traced
(a td.function created in a loop), and it names the argument whose change
caused the last trace. As TensorFlow logs it (at WARNING level, through its
"tensorflow" logger), treadle logs it through Python logging's "treadle"
logger, so `logging` configuration (and caplog in tests) controls it."""

import collections
import logging
import os

from treadle.function import trace_type

THRESHOLD = 5   # traces ...
WINDOW = 10     # ... within this many calls of one td.function
MAX_WARNINGS = 2  # per td.function, as TensorFlow's detector

_GENERIC = ("Tracing is expensive and the excessive number of tracings could be due to (1) creating @td.function "
            "repeatedly in a loop, (2) passing tensors with different shapes, (3) passing Python objects instead "
            "of tensors. For (1), please define your @td.function outside of the loop. For (2), @td.function has "
            "reduce_retracing=True option that can avoid unnecessary retracing. For (3), please refer to the "
            "tf.function guide's 'Controlling retracing' section.")

# treadle's own wrappers (td.data's map/filter functions, one td.function per
# dataset by design) are not "a td.function created in a loop".
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# Per Python code object: how many td.functions made of it have traced.
_functions_traced = collections.Counter()
_warned_codes = set()
_LOG = logging.getLogger("treadle")


class RetracingDetector:
    """One per td.function: the call clock at its traces made by eager calls
    within the last WINDOW calls. As in TensorFlow, a call made while another function is
    being traced does not count (its traces are the outer function's), and
    one td.function warns at most MAX_WARNINGS times."""

    __slots__ = ("_traced_at", "_last_type", "_warnings")

    def __init__(self):
        self._traced_at = collections.deque()
        self._last_type = None
        self._warnings = 0

    def traced(self, fn, ftype, clock, per_instance, eager=True):
        """Records a trace of `fn` (the Python function) for `ftype` at call
        number `clock`; warns when the traces of eager calls are too frequent."""
        previous, self._last_type = self._last_type, ftype
        if previous is None and not per_instance:
            _first_trace(fn)
        if not eager:
            return
        traced_at = self._traced_at
        traced_at.append(clock)
        while clock - traced_at[0] >= WINDOW:
            traced_at.popleft()
        if self._warnings >= MAX_WARNINGS or len(traced_at) < THRESHOLD:
            return
        self._warnings += 1
        calls = max(clock - traced_at[0] + 1, len(traced_at))
        cause = _cause(previous, ftype) if previous is not None else ""
        _LOG.warning(f"{len(traced_at)} out of the last {calls} calls to {fn} triggered td.function retracing. "
                     f"{cause}{_GENERIC}")


def _first_trace(fn):
    code = getattr(fn, "__code__", None)
    if code is None or code.co_filename.startswith(_PACKAGE_DIR):
        return
    _functions_traced[code] += 1
    if _functions_traced[code] >= THRESHOLD and code not in _warned_codes:
        _warned_codes.add(code)
        _LOG.warning(f"{_functions_traced[code]} td.functions were made of {fn} and each of them traced: a "
                     f"td.function created again and again (in a loop) traces every time. This is cause (1) of "
                     f"td.function retracing. {_GENERIC}")


def _cause(old, new):
    """A sentence naming the argument whose type changed between two traces."""
    old_params = {p.name: p.type for p in old.parameters}
    for p in new.parameters:
        before = old_params.get(p.name)
        if before is None or before == p.type:
            continue
        a, b = before, p.type
        if type(a) is trace_type.TensorType and type(b) is trace_type.TensorType:
            if a.dtype != b.dtype:
                return (f"The last retrace was caused by argument '{p.name}', a tensor whose dtype changed from "
                        f"{a.dtype.name} to {b.dtype.name} (cause 2). ")
            return (f"The last retrace was caused by argument '{p.name}', a tensor whose shape changed from "
                    f"{a.shape} to {b.shape} (cause 2: reduce_retracing=True or an input_signature with None "
                    "dimensions traces once for both). ")
        if isinstance(a, trace_type.Literal) and isinstance(b, trace_type.Literal):
            return (f"The last retrace was caused by argument '{p.name}', a Python value that changed from "
                    f"{a.value!r} to {b.value!r} (cause 3: every new Python value is a new trace; pass a tensor "
                    "instead). ")
        return f"The last retrace was caused by argument '{p.name}', whose type changed from {a!r} to {b!r}. "
    if len(new.parameters) != len(old.parameters):
        return "The last retrace was caused by a different number of arguments. "
    return ""
