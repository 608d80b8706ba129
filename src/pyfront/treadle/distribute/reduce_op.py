"""td.distribute.ReduceOp: how values of the replicas combine."""

import enum


class ReduceOp(enum.Enum):
    """SUM adds the replicas' values; MEAN divides that sum by their count
    (with an `axis`, by the number of elements reduced, as TensorFlow does)."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        """The ReduceOp of a TensorFlow VariableAggregation name ("sum", "mean")."""
        name = getattr(aggregation, "name", aggregation)
        try:
            return ReduceOp[str(name).upper()]
        except KeyError:
            raise ValueError(f"no ReduceOp for aggregation {aggregation!r}; expected SUM or MEAN") from None


def as_reduce_op(op):
    """`op` as a ReduceOp: a ReduceOp, or its name ("SUM", "sum", "MEAN")."""
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ReduceOp.__members__:
        return ReduceOp[op.upper()]
    raise ValueError(f"reduce_op must be td.distribute.ReduceOp.SUM or MEAN, got {op!r}")
