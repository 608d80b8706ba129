"""`td.loom.Schedule(data)`: serialized WeaverMessage bytes marked as a loom
schedule, so that a td.function takes them as an argument with its own trace
type (the loom's ScheduleType, shared with Weavers): one trace serves every
schedule of a loom, where plain bytes are a Python literal and trace once per
value, as in TensorFlow. Bytes are never guessed to be schedules: marking
them is the caller's choice, so ordinary bytes arguments keep TensorFlow's
semantics."""

from treadle import loom_pb2
from treadle.loom.schedule_type import ScheduleType
from treadle.loom.weaver import Weaver


class Schedule:
    """A loom schedule given as its serialized WeaverMessage (bytes, or a
    Weaver, which is serialized). The message is parsed once, here, to read the
    fingerprint of the loom it is for; a loom checks the rest when it runs it.
    `loom(schedule)` runs it, eagerly or inside a td.function."""

    __slots__ = ("_data", "_loom_fingerprint", "__weakref__")

    def __init__(self, data):
        if isinstance(data, Weaver):
            data = data.serialize()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"td.loom.Schedule: expected serialized WeaverMessage bytes or a Weaver, got "
                            f"{type(data).__name__}")
        data = bytes(data)
        message = loom_pb2.WeaverMessage()
        try:
            message.ParseFromString(data)
        except Exception as e:  # protobuf's DecodeError, which Python's and upb's runtimes spell differently
            raise ValueError(f"td.loom.Schedule: the {len(data)} bytes are not a serialized WeaverMessage "
                             f"({e})") from None
        if message.loom_fingerprint == 0:
            raise ValueError(f"td.loom.Schedule: the {len(data)} bytes carry no loom fingerprint, so they are not a "
                             "WeaverMessage of any loom")
        self._data = data
        self._loom_fingerprint = message.loom_fingerprint

    @property
    def data(self):
        """The serialized WeaverMessage."""
        return self._data

    @property
    def loom_fingerprint(self):
        """The fingerprint of the loom this schedule is for."""
        return self._loom_fingerprint

    def __tf_tracing_type__(self, context):
        return ScheduleType(self._loom_fingerprint)

    def _loom_schedule(self):
        """(loom fingerprint, a function giving the serialized message), for ScheduleType."""
        return self._loom_fingerprint, lambda: self._data

    def __eq__(self, other):
        return type(other) is Schedule and other._data == self._data

    def __hash__(self):
        return hash(self._data)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"<td.loom.Schedule for loom {self._loom_fingerprint:#018x}: {len(self._data)} bytes>"
