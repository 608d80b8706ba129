"""Gradient rules of the ops added for TensorFlow's porting names (issue 17):
log1p, softplus, erf, cumulative sums and products, reverse, roll, pad and
the index-tuple ops (gather_nd, scatter_nd, tensor_scatter_nd_*)."""

import math

import numpy as np

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff import helpers
from treadle.autodiff.batching_registry import NotBatchable, RegisterBatchingRule, RunsPerExample
from treadle.autodiff.helpers import ints, mul, neg, run, scalar
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr
from treadle.framework import dtypes
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops

NotDifferentiable("StopGradient")
RegisterBatchingRule("StopGradient")(bh.same_op)


# ---------------------------------------------------------------- elementwise

RegisterBatchingRule("Log1p", "Softplus", "Erf", "CheckNumerics")(bh.same_op)

@RegisterGradient("Log1p")
def _log1p_grad(op, dy):
    x = op.inputs[0]
    return [helpers.div(dy, helpers.add(x, scalar(1, x.dtype)))]


@RegisterGradient("Softplus")
def _softplus_grad(op, dy):
    return [mul(dy, run("Sigmoid", [op.inputs[0]]))]


@RegisterGradient("Erf")
def _erf_grad(op, dy):
    x = op.inputs[0]
    two_over_sqrt_pi = scalar(2.0 / math.sqrt(math.pi), x.dtype)
    return [mul(dy, mul(two_over_sqrt_pi, run("Exp", [neg(mul(x, x))])))]


# ---------------------------------------------------------------- scans

@RegisterBatchingRule("Cumsum", "Cumprod", "ReverseV2")
def _axis_second_batched(ctx, op, inputs, batched):
    return bh.reemit(op, [inputs[0], bh.shift_axis_tensor(inputs[1], batched[1])])

def _cumsum(x, axis, exclusive, reverse):
    return run("Cumsum", [x, axis], {"exclusive": exclusive, "reverse": reverse})


@RegisterGradient("Cumsum")
def _cumsum_grad(op, dy):
    # Each input reaches the outputs after it (before it, reversed): sum dy the other way.
    exclusive, reverse = get_attr(op, "exclusive"), get_attr(op, "reverse")
    return [_cumsum(dy, op.inputs[1], exclusive, not reverse), None]


@RegisterGradient("Cumprod")
def _cumprod_grad(op, dy):
    # d out_j / d x_i = out_j / x_i for the j that include i; as TensorFlow, valid where x != 0.
    x, axis = op.inputs
    exclusive, reverse = get_attr(op, "exclusive"), get_attr(op, "reverse")
    summed = _cumsum(mul(op.outputs[0], dy), axis, exclusive, not reverse)
    return [helpers.div(summed, x), None]


# ---------------------------------------------------------------- reordering

@RegisterBatchingRule("Roll")
def _roll_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the shift")
    return bh.reemit(op, [inputs[0], inputs[1], bh.shift_axis_tensor(inputs[2], batched[2])])


@RegisterBatchingRule("PadV2")
def _pad_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1, 2], "the padding")
    paddings = inputs[1]
    none = convert_to_tensor(np.zeros((1, 2), np.int64), dtype=paddings.dtype)  # no padding of the batch axis
    return [run("PadV2", [inputs[0], run("ConcatV2", [none, paddings, scalar(0, dtypes.int32)]), inputs[2]])]

@RegisterGradient("ReverseV2")
def _reverse_grad(op, dy):
    return [run("ReverseV2", [dy, op.inputs[1]]), None]


@RegisterGradient("Roll")
def _roll_grad(op, dy):
    return [run("Roll", [dy, neg(op.inputs[1]), op.inputs[2]]), None, None]


@RegisterGradient("PadV2")
def _pad_grad(op, dy, *, wanted):
    # The interior of dy: begin at the leading paddings, as large as the input.
    x, paddings = op.inputs[0], op.inputs[1]
    begin = run("StridedSlice", [helpers.cast(paddings, dtypes.int32), helpers.ints([0, 0]), helpers.ints([0, 1]),
                                 helpers.ints([1, 1])], {"begin_mask": 1, "end_mask": 1, "shrink_axis_mask": 2})
    end = helpers.add(begin, helpers.shape(x))
    strides = run("OnesLike", [begin])
    dx = run("StridedSlice", [dy, begin, end, strides])
    dvalue = helpers.sub(helpers.reduce_sum(dy, helpers.all_axes(dy)), helpers.reduce_sum(dx, helpers.all_axes(dx))) \
        if wanted[2] else None
    return [dx, None, dvalue]


# ---------------------------------------------------------------- index tuples

def _with_example_index(ctx, indices):
    """Batched index tuples [B, ..., k] with each example's own index in
    front: [B, ..., k + 1], addressing a tensor with the batch axis."""
    rows = run("Range", [scalar(0, indices.dtype), helpers.cast(ctx.size_tensor(), indices.dtype),
                         scalar(1, indices.dtype)])
    rank = helpers.static_shape(indices)
    if rank is None:
        raise NotBatchable("the rank of the indices is unknown")
    rows = bh.expand_to_rank(rows, 0, len(rank) - 1)
    leading = run("ConcatV2", [run("StridedSlice", [helpers.shape(indices), ints([0]), ints([-1]), ints([1])]),
                               ints([1]), scalar(0, dtypes.int32)])
    return run("ConcatV2", [run("BroadcastTo", [rows, leading]), indices, scalar(-1, dtypes.int32)])


@RegisterBatchingRule("GatherNd")
def _gather_nd_batched(ctx, op, inputs, batched):
    params, indices = inputs
    if not batched[0]:  # one shared table: the leading axes of the indices are gathered alike
        return [run("GatherNd", [params, indices])]
    return [run("GatherNd", [params, _with_example_index(ctx, ctx.batched_all([indices], batched[1:])[0])])]


@RegisterBatchingRule("ScatterNd")
def _scatter_nd_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [2], "the shape")
    indices, updates = ctx.batched_all(inputs[:2], batched[:2])
    return [run("ScatterNd", [_with_example_index(ctx, indices), updates, bh.prepend(inputs[2], ctx.size())])]


@RegisterBatchingRule("TensorScatterAdd", "TensorScatterSub", "TensorScatterUpdate")
def _tensor_scatter_batched(ctx, op, inputs, batched):
    tensor, indices, updates = ctx.batched_all(inputs, batched)
    return [run(op.type, [tensor, _with_example_index(ctx, indices), updates])]

def _gather_nd(t, indices):
    return run("GatherNd", [t, indices])


@RegisterGradient("GatherNd")
def _gather_nd_grad(op, dy):
    params, indices = op.inputs
    shape = helpers.cast(helpers.shape(params), indices.dtype)
    return [run("ScatterNd", [indices, dy, shape]), None]


@RegisterGradient("ScatterNd")
def _scatter_nd_grad(op, dy):
    return [None, _gather_nd(dy, op.inputs[0]), None]


@RegisterGradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, dy):
    return [dy, None, _gather_nd(dy, op.inputs[1])]


@RegisterGradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op, dy):
    return [dy, None, neg(_gather_nd(dy, op.inputs[1]))]


@RegisterGradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, dy, *, wanted):
    # The replaced slices get no gradient from the tensor; the updates get theirs.
    indices, updates = op.inputs[1], op.inputs[2]
    dtensor = run("TensorScatterUpdate", [dy, indices, helpers.zeros_like(updates)]) if wanted[0] else None
    return [dtensor, None, _gather_nd(dy, indices)]


@RegisterGradient("EnsureShape")
def _ensure_shape_grad(op, dy):
    return [dy]


@RegisterGradient("CheckNumerics")
def _check_numerics_grad(op, dy):
    # As TensorFlow: the gradient is checked too.
    return [run("CheckNumerics", [dy], {"message": "Not a number (NaN) or infinity (Inf) values detected in "
                                                   "gradient. " + get_attr(op, "message")})]


NotDifferentiable("Assert")
RunsPerExample("each example's seed gives its own stream of numbers", "StatelessRandomUniform",
               "StatelessRandomNormal")


@RegisterBatchingRule("Assert")
def _assert_batched(ctx, op, inputs, batched):
    # The condition must hold for every example; the data is shown for all.
    condition = inputs[0]
    if batched[0]:
        condition = run("All", [condition, helpers.all_axes(condition)])
    return bh.reemit(op, [condition] + list(inputs[1:]))


@RegisterBatchingRule("EnsureShape")
def _ensure_shape_batched(ctx, op, inputs, batched):
    shape = get_attr(op, "shape")
    if shape is None:
        return [inputs[0]]
    return [run("EnsureShape", [inputs[0]], {"shape": [None] + list(shape)})]


@RegisterBatchingRule("TopKV2")
def _top_k_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "k")
    return bh.reemit(op, inputs)


@RegisterGradient("TopKV2")
def _top_k_grad(op, dvalues, dindices=None):
    # Each value came from one position of its row: put dvalues back there.
    x, indices = op.inputs[0], op.outputs[1]
    if dvalues is None:
        return [None, None]
    n = array_ops.shape(x)[-1] if helpers.static_shape(x) is None or helpers.static_shape(x)[-1] is None \
        else helpers.static_shape(x)[-1]
    hot = array_ops.one_hot(indices, n, dtype=dvalues.dtype)
    placed = mul(hot, run("ExpandDims", [dvalues, scalar(-1, dtypes.int32)]))
    return [helpers.reduce_sum(placed, scalar(-2, dtypes.int32)), None]


NotDifferentiable("StatelessRandomUniform", "StatelessRandomNormal")


# ---------------------------------------------------------------- linear algebra

RegisterBatchingRule("MatrixInverse", "MatrixDeterminant", "Cholesky")(bh.same_op)


@RegisterBatchingRule("MatrixSolve")
def _matrix_solve_batched(ctx, op, inputs, batched):
    return bh.reemit(op, ctx.batched_all(inputs, batched))

def _bmm(a, b, adj_a=False, adj_b=False):
    return run("BatchMatMulV2", [a, b], {"adj_x": adj_a, "adj_y": adj_b})


def _transpose_last2(t):
    shape = helpers.static_shape(t)
    if shape is not None:
        r = len(shape)
        return run("Transpose", [t, helpers.ints(list(range(r - 2)) + [r - 1, r - 2])])
    # Unknown rank: the permutation [0, ..., r-3, r-1, r-2] computed when the graph runs.
    r = run("Rank", [t])
    one, two = scalar(1, dtypes.int32), scalar(2, dtypes.int32)
    lead = run("Range", [scalar(0, dtypes.int32), helpers.sub(r, two), one])
    last = run("Pack", [helpers.sub(r, one), helpers.sub(r, two)], {"axis": 0})
    return run("Transpose", [t, run("ConcatV2", [lead, last, scalar(0, dtypes.int32)])])


@RegisterGradient("MatrixInverse")
def _matrix_inverse_grad(op, dy):
    y = op.outputs[0]  # d(A^-1) = -A^-1 dA A^-1
    return [neg(_bmm(_bmm(y, dy, adj_a=True), y, adj_b=True))]


@RegisterGradient("MatrixSolve")
def _matrix_solve_grad(op, dx, *, wanted):
    a, x = op.inputs[0], op.outputs[0]
    db = run("MatrixSolve", [_transpose_last2(a), dx])
    da = neg(_bmm(db, x, adj_b=True)) if wanted[0] else None
    return [da, db]


@RegisterGradient("MatrixDeterminant")
def _matrix_determinant_grad(op, dy):
    a, det = op.inputs[0], op.outputs[0]
    scale = mul(dy, det)
    scale = run("ExpandDims", [run("ExpandDims", [scale, scalar(-1, dtypes.int32)]), scalar(-1, dtypes.int32)])
    return [mul(scale, _transpose_last2(run("MatrixInverse", [a])))]


@RegisterGradient("Cholesky")
def _cholesky_grad(op, dl):
    # TensorFlow's rule (Murray, 2016): symmetric, from the lower triangle of L^T dL with its diagonal halved.
    l = op.outputs[0]
    n = array_ops.shape(l)[-1]
    rows = run("ExpandDims", [run("Range", [scalar(0, dtypes.int32), n, scalar(1, dtypes.int32)]),
                              scalar(-1, dtypes.int32)])
    cols = run("Range", [scalar(0, dtypes.int32), n, scalar(1, dtypes.int32)])
    strict = helpers.cast(run("Greater", [rows, cols]), l.dtype)
    diag = helpers.cast(run("Equal", [rows, cols]), l.dtype)
    mask = helpers.add(strict, mul(diag, scalar(0.5, l.dtype)))
    l_inverse = run("MatrixInverse", [l])
    middle = mul(_bmm(l, dl, adj_a=True), mask)
    grad = _bmm(_bmm(l_inverse, middle, adj_a=True), l_inverse)
    return [mul(helpers.add(grad, _transpose_last2(grad)), scalar(0.5, l.dtype))]
