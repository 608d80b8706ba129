"""Gradient rules of the ops added for TensorFlow's porting names (issue 17):
log1p, softplus, erf, cumulative sums and products, reverse, roll, pad and
the index-tuple ops (gather_nd, scatter_nd, tensor_scatter_nd_*)."""

import math

from treadle.autodiff import _ops
from treadle.autodiff._ops import mul, neg, run, scalar
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr, input_wanted
from treadle.framework import dtypes

NotDifferentiable("StopGradient")


# ---------------------------------------------------------------- elementwise

@RegisterGradient("Log1p")
def _log1p_grad(op, dy):
    x = op.inputs[0]
    return [_ops.div(dy, _ops.add(x, scalar(1, x.dtype)))]


@RegisterGradient("Softplus")
def _softplus_grad(op, dy):
    return [mul(dy, run("Sigmoid", [op.inputs[0]]))]


@RegisterGradient("Erf")
def _erf_grad(op, dy):
    x = op.inputs[0]
    two_over_sqrt_pi = scalar(2.0 / math.sqrt(math.pi), x.dtype)
    return [mul(dy, mul(two_over_sqrt_pi, run("Exp", [neg(mul(x, x))])))]


# ---------------------------------------------------------------- scans

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
    return [_ops.div(summed, x), None]


# ---------------------------------------------------------------- reordering

@RegisterGradient("ReverseV2")
def _reverse_grad(op, dy):
    return [run("ReverseV2", [dy, op.inputs[1]]), None]


@RegisterGradient("Roll")
def _roll_grad(op, dy):
    return [run("Roll", [dy, neg(op.inputs[1]), op.inputs[2]]), None, None]


@RegisterGradient("PadV2")
def _pad_grad(op, dy):
    # The interior of dy: begin at the leading paddings, as large as the input.
    x, paddings = op.inputs[0], op.inputs[1]
    begin = run("StridedSlice", [_ops.cast(paddings, dtypes.int32), _ops.ints([0, 0]), _ops.ints([0, 1]),
                                 _ops.ints([1, 1])], {"begin_mask": 1, "end_mask": 1, "shrink_axis_mask": 2})
    end = _ops.add(begin, _ops.shape(x))
    strides = run("OnesLike", [begin])
    dx = run("StridedSlice", [dy, begin, end, strides])
    dvalue = _ops.sub(_ops.reduce_sum(dy, _ops.all_axes(dy)), _ops.reduce_sum(dx, _ops.all_axes(dx))) \
        if input_wanted(2) else None
    return [dx, None, dvalue]


# ---------------------------------------------------------------- index tuples

def _gather_nd(t, indices):
    return run("GatherNd", [t, indices])


@RegisterGradient("GatherNd")
def _gather_nd_grad(op, dy):
    params, indices = op.inputs
    shape = _ops.cast(_ops.shape(params), indices.dtype)
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
def _tensor_scatter_update_grad(op, dy):
    # The replaced slices get no gradient from the tensor; the updates get theirs.
    indices, updates = op.inputs[1], op.inputs[2]
    dtensor = run("TensorScatterUpdate", [dy, indices, _ops.zeros_like(updates)]) if input_wanted(0) else None
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


@RegisterGradient("TopKV2")
def _top_k_grad(op, dvalues, dindices=None):
    # Each value came from one position of its row: put dvalues back there.
    from treadle.ops import array_ops
    x, indices = op.inputs[0], op.outputs[1]
    if dvalues is None:
        return [None, None]
    n = array_ops.shape(x)[-1] if _ops.static_shape(x) is None or _ops.static_shape(x)[-1] is None \
        else _ops.static_shape(x)[-1]
    hot = array_ops.one_hot(indices, n, dtype=dvalues.dtype)
    placed = mul(hot, run("ExpandDims", [dvalues, scalar(-1, dtypes.int32)]))
    return [_ops.reduce_sum(placed, scalar(-2, dtypes.int32)), None]


NotDifferentiable("StatelessRandomUniform", "StatelessRandomNormal")
