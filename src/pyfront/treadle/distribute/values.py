"""Values that differ per replica (PerReplica), and moving them in and out of
nested structures."""

from treadle.function import trace_type
from treadle.util import nest


class PerReplica:
    """One value per replica of a strategy, in replica order (TensorFlow's
    PerReplica). `strategy.run` returns these; `strategy.reduce` and
    `strategy.experimental_local_results` take them."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = tuple(values)

    def __len__(self):
        return len(self.values)

    def __repr__(self):
        inner = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self.values))
        return f"PerReplica:{{\n{inner}\n}}"

    def __tf_tracing_type__(self, context):
        """As a td.function argument: the trace types of its values, so a step
        taking a distributed batch is traced once per batch signature."""
        return PerReplicaType([trace_type.from_value(v, context) for v in self.values])


class PerReplicaType(trace_type.SequenceType):
    """The trace type of a PerReplica: one component per replica."""

    rebuilt_in_signatures = False

    def _make(self, values):
        return PerReplica(values)

    def to_tensors(self, value):
        return super().to_tensors(value.values)

    def cast(self, value, casting_context=None):
        if not isinstance(value, PerReplica) or len(value.values) != len(self.components):
            raise ValueError(f"Can not cast {value!r} to {self!r}")
        return PerReplica([c.cast(v, casting_context) for c, v in zip(self.components, value.values)])

    def __repr__(self):
        return f"PerReplica[{', '.join(map(repr, self.components))}]"


def select_replica(replica_id, structure):
    """`structure` with each PerReplica replaced by replica `replica_id`'s value."""
    def pick(value):
        return value.values[replica_id] if isinstance(value, PerReplica) else value
    return nest.map_structure(pick, structure)


def regroup(per_replica_results):
    """From one result structure per replica to one structure of PerReplica
    leaves (a single replica's result is returned as it is)."""
    if len(per_replica_results) == 1:
        return per_replica_results[0]
    first = per_replica_results[0]
    for i, other in enumerate(per_replica_results[1:], start=1):
        try:
            nest.assert_same_structure(first, other)
        except (TypeError, ValueError) as e:
            raise ValueError(f"replica {i} returned a structure that differs from replica 0's: {e}") from None
    flats = [nest.flatten(r) for r in per_replica_results]
    return nest.pack_sequence_as(first, [PerReplica(vs) for vs in zip(*flats)])


def local_results(value):
    """The values of `value` on this process's replicas, as a tuple."""
    if isinstance(value, PerReplica):
        return value.values
    return (value,)
