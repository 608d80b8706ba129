"""Gradient rules of the neural-network ops."""

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff import helpers
from treadle.autodiff.batching_registry import RegisterBatchingRule
from treadle.autodiff.helpers import ints, mul, run, run_all, scalar, sub
from treadle.autodiff.registry import RegisterGradient, get_attr
from treadle.framework import dtypes

RegisterBatchingRule("Relu")(bh.same_op)
RegisterBatchingRule("ReluGrad")(bh.same_shapes)


@RegisterBatchingRule("Softmax", "LogSoftmax")
def _softmax_batched(ctx, op, inputs, batched):
    attrs = dict(op.attrs)
    if "axis" in attrs:
        attrs["axis"] = bh.shift_axis_value(get_attr(op, "axis"))
    return list(run_all(op.type, [inputs[0]], attrs))


@RegisterBatchingRule("L2Loss")
def _l2_loss_batched(ctx, op, inputs, batched):
    x = inputs[0]
    axes = ints(range(1, bh.per_example_rank(op, 0) + 1))
    return [mul(run("Sum", [run("Square", [x]), axes]), scalar(0.5, x.dtype))]


@RegisterBatchingRule("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_batched(ctx, op, inputs, batched):
    # Every example's rows are rows of one batch of logits.
    features, labels = ctx.batched_all(inputs, batched)
    classes = run("StridedSlice", [helpers.shape(features), ints([-1]), ints([0]), ints([1])], {"end_mask": 1})
    flat_features = run("Reshape", [features, run("ConcatV2", [ints([-1]), classes, scalar(0, dtypes.int32)])])
    loss, backprop = run_all(op.type, [flat_features, run("Reshape", [labels, ints([-1])])])
    return [run("Reshape", [loss, helpers.shape(labels)]), run("Reshape", [backprop, helpers.shape(features)])]


@RegisterGradient("Relu")
def _relu_grad(op, dz):
    return [run("ReluGrad", [dz, op.outputs[0]])]


@RegisterGradient("ReluGrad")
def _relu_grad_grad(op, ddz):
    # ReluGrad(g, f) is linear in g, and piecewise constant in f.
    return run("ReluGrad", [ddz, op.inputs[1]]), None


def _sum_along(x, axis):
    return run("Sum", [x, helpers.ints([axis])], {"keep_dims": True})


@RegisterGradient("Softmax")
def _softmax_grad(op, dz):
    y = op.outputs[0]
    axis = get_attr(op, "axis")
    return [mul(sub(dz, _sum_along(mul(dz, y), axis)), y)]


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, dz):
    y = op.outputs[0]
    axis = get_attr(op, "axis")
    return [sub(dz, mul(run("Exp", [y]), _sum_along(dz, axis)))]


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, dz):
    return [mul(op.inputs[0], dz)]


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, dloss, dbackprop):
    # The op's second output is the gradient of the loss with respect to the
    # logits (softmax - one_hot(labels)).
    logits = op.inputs[0]
    g = None
    if dloss is not None:
        g = mul(run("ExpandDims", [dloss, scalar(-1, dtypes.int32)]), op.outputs[1])
    if dbackprop is not None:
        # Second-order terms: backprop depends on the logits through the softmax.
        softmax = run("Softmax", [logits], {"axis": -1})
        h = mul(sub(dbackprop, _sum_along(mul(dbackprop, softmax), -1)), softmax)
        g = h if g is None else helpers.add(g, h)
    return g, None
