"""A Weaver as a td.function argument: it traces as "a schedule for the loom
with this fingerprint" and reaches the traced function as a scalar string
tensor (its serialized WeaverMessage), which `loom(schedule)` runs. One trace
serves every schedule of the loom; without this a Weaver was traced by
identity, so each call retraced.

Serialized bytes stay Python literals, as in TensorFlow (each value its own
trace); mark them as a schedule with `td.loom.Schedule(data)` (loom/schedule.py),
which has this trace type too. (A bytes subclass carrying this type was tried:
NumPy reads a bytes subclass as a sequence of ints, so
`td.constant(weaver.serialize())` broke.)"""

from treadle.framework import dtypes
from treadle.framework.tensor import constant
from treadle.function.trace_type import TraceType


class ScheduleType(TraceType):
    """The TraceType of a Weaver of the loom with fingerprint `loom_fingerprint`;
    its placeholder is a scalar string tensor."""

    __slots__ = ("loom_fingerprint",)

    def __init__(self, loom_fingerprint):
        self.loom_fingerprint = int(loom_fingerprint)

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def placeholder_value(self, placeholder_context=None):
        return placeholder_context.graph.add_placeholder(dtypes.string, [], placeholder_context.name)

    def to_tensors(self, value):
        return [constant(self._serialized(value))]

    def cast(self, value, casting_context=None):
        self._serialized(value)
        return value

    def _serialized(self, value):
        # A Weaver and a td.loom.Schedule describe themselves (fingerprint, a
        # function giving the bytes), so this module imports neither of them.
        describe = getattr(value, "_loom_schedule", None)
        if describe is None:
            raise ValueError(f"expected a Weaver or td.loom.Schedule of the loom with fingerprint "
                             f"{self.loom_fingerprint:#x}, got {type(value).__name__}")
        fingerprint, serialize = describe()
        if fingerprint != self.loom_fingerprint:
            raise ValueError(f"a schedule of the loom with fingerprint {fingerprint:#x} where one of "
                             f"{self.loom_fingerprint:#x} was expected")
        return serialize()

    def __eq__(self, other):
        return type(other) is ScheduleType and other.loom_fingerprint == self.loom_fingerprint

    def __hash__(self):
        return hash((ScheduleType, self.loom_fingerprint))

    def __repr__(self):
        return f"Schedule[loom {self.loom_fingerprint:#018x}]"
