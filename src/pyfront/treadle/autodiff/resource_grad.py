"""Gradient rules of the variable (resource) ops. The gradient of a variable
is the gradient of its handle: reads pass it through, writes stop it."""

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff import helpers
from treadle.autodiff.batching_registry import NotBatchable, RegisterBatchingRule, RunsPerExample, Unbatched
from treadle.autodiff.helpers import ints, run, scalar
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient
from treadle.framework import dtypes

NotDifferentiable("VarHandleOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                  "ResourceScatterAdd", "ResourceScatterSub")

# Ops that run Python or random number generators: no gradient, as in TensorFlow.
NotDifferentiable("Print", "PyFunc", "RandomStandardNormal", "RandomUniform", "RandomUniformInt")
RunsPerExample("it runs Python (or prints) with each example's values", "Print", "PyFunc")


@RegisterBatchingRule("RandomStandardNormal", "RandomUniform", "RandomUniformInt", always=True)
def _random_batched(ctx, op, inputs, batched):
    # Every example draws its own numbers: one draw of the batch's shape.
    bh.unbatched_only(batched, range(len(inputs)), "the shape or the range")
    return bh.reemit(op, [bh.prepend(inputs[0], ctx.size())] + list(inputs[1:]))


@RegisterBatchingRule("VarHandleOp")
def _var_handle_batched(ctx, op, inputs, batched):
    return [Unbatched(t) for t in ctx.reemit(op, inputs)]  # never batched: it has no inputs


@RegisterBatchingRule("ReadVariableOp")
def _read_variable_batched(ctx, op, inputs, batched):
    raise NotBatchable("the variable differs per example")


@RegisterBatchingRule("AssignVariableOp")
def _assign_variable_batched(ctx, op, inputs, batched):
    # The examples assign in turn: the last one's value stays.
    bh.unbatched_only(batched, [0], "the variable")
    last = run("Sub", [ctx.size_tensor(), scalar(1, dtypes.int32)])
    return bh.reemit(op, [inputs[0], run("GatherV2", [inputs[1], last, ints(0)])])


@RegisterBatchingRule("AssignAddVariableOp", "AssignSubVariableOp", always=True)
def _accumulate_variable_batched(ctx, op, inputs, batched):
    # Every example adds (subtracts) its value: once, their sum.
    bh.unbatched_only(batched, [0], "the variable")
    value = inputs[1]
    if batched[1]:
        total = run("Sum", [value, ints(0)])
    else:
        total = run("Mul", [value, helpers.cast(ctx.size_tensor(), value.dtype)])
    return bh.reemit(op, [inputs[0], total])


@RegisterBatchingRule("ResourceScatterAdd", "ResourceScatterSub", always=True)
def _scatter_variable_batched(ctx, op, inputs, batched):
    # Every example's updates, as one scatter whose indices have a batch axis.
    bh.unbatched_only(batched, [0], "the variable")
    return bh.reemit(op, [inputs[0]] + ctx.batched_all(inputs[1:], batched[1:]))


@RegisterGradient("ReadVariableOp")
def _read_variable_grad(op, dz):
    return [dz]  # dense or IndexedSlices alike (backprop.SPARSE_PASS_THROUGH)
