"""String ops have no gradient (their values are not numbers); their
batching rules sit beside that."""

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff.batching_registry import NotBatchable, RegisterBatchingRule
from treadle.autodiff.registry import NotDifferentiable

NotDifferentiable("StringJoin", "ReduceJoin", "AsString")

RegisterBatchingRule("AsString")(bh.same_op)
RegisterBatchingRule("ReduceJoin")(bh.axis_input_shifted)


@RegisterBatchingRule("StringJoin")
def _string_join_batched(ctx, op, inputs, batched):
    # Its inputs have one shape, or are scalars beside tensors of one shape:
    # a batch axis keeps the first case elementwise, not the second.
    if len({bh.per_example_rank(op, i) for i in range(len(inputs))}) > 1:
        raise NotBatchable("it joins scalars with tensors, whose shapes a batch axis would make unequal")
    return bh.same_shapes(ctx, op, inputs, batched)
