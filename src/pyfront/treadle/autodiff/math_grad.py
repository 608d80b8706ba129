"""Gradient rules of the arithmetic, elementwise math, matmul and reduction ops."""

import math

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff import helpers
from treadle.autodiff.batching_registry import RegisterBatchingRule, RunsPerExample
from treadle.autodiff.helpers import ints, mul, neg, run, scalar, unbroadcast
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr
from treadle.framework import dtypes

NotDifferentiable(
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot", "BitwiseAnd", "BitwiseOr", "Invert",
    "All", "Any", "ArgMax", "ArgMin",
    "FloorDiv",  # piecewise constant; TensorFlow gives None too
    "BroadcastGradientArgs", "InvertPermutation",
)
RegisterBatchingRule("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr",
                     "BitwiseAnd", "BitwiseOr", "FloorDiv")(bh.elementwise)
RegisterBatchingRule("LogicalNot", "Invert")(bh.same_op)
RunsPerExample("the reduction axes it returns depend on each example's shapes", "BroadcastGradientArgs")


@RegisterBatchingRule("InvertPermutation")
def _invert_permutation_batched(ctx, op, inputs, batched):
    # inverse[b, perm[b, i]] = i, one scatter for the batch.
    perm = inputs[0]
    n = run("StridedSlice", [helpers.shape(perm), ints([1]), ints([2]), ints([1])], {"shrink_axis_mask": 1})
    positions = ctx.tile(run("Range", [scalar(0, perm.dtype), helpers.cast(n, perm.dtype), scalar(1, perm.dtype)]))
    rows = run("BroadcastTo", [run("ExpandDims", [run("Range", [scalar(0, perm.dtype),
                                                                   helpers.cast(ctx.size_tensor(), perm.dtype),
                                                                   scalar(1, perm.dtype)]), ints(1)]),
                               helpers.shape(perm)])
    indices = run("Pack", [rows, perm], {"axis": -1})
    return [run("ScatterNd", [indices, positions, helpers.shape(perm)])]


RegisterBatchingRule("All", "Any", "ArgMax", "ArgMin")(bh.axis_input_shifted)


# ---------------------------------------------------------------- binary arithmetic

RegisterBatchingRule("AddV2", "Add", "Sub", "Mul", "RealDiv", "FloorMod", "Pow", "Maximum", "Minimum")(bh.elementwise)


@RegisterBatchingRule("AddN")
def _add_n_batched(ctx, op, inputs, batched):
    # Every example adds tensors of one shape: the batched ones add as they
    # are, the sum of the unbatched ones broadcasts against theirs.
    rows = [v for v, b in zip(inputs, batched) if b]
    shared = [v for v, b in zip(inputs, batched) if not b]
    total = rows[0] if len(rows) == 1 else run("AddN", rows)
    if shared:
        total = run("AddV2", [total, shared[0] if len(shared) == 1 else run("AddN", shared)])
    return [total]

@RegisterGradient("AddV2", "Add")  # Add: TensorFlow's op for strings, the same rule for numbers
def _add_grad(op, dz, *, wanted):
    wx, wy = wanted
    return unbroadcast(op.inputs[0], op.inputs[1], dz if wx else None, dz if wy else None)


@RegisterGradient("Sub")
def _sub_grad(op, dz, *, wanted):
    wx, wy = wanted
    return unbroadcast(op.inputs[0], op.inputs[1], dz if wx else None, neg(dz) if wy else None)


@RegisterGradient("Mul")
def _mul_grad(op, dz, *, wanted):
    x, y = op.inputs
    wx, wy = wanted
    return unbroadcast(x, y, mul(dz, y) if wx else None, mul(x, dz) if wy else None)


@RegisterGradient("RealDiv")
def _real_div_grad(op, dz, *, wanted):
    x, y = op.inputs
    wx, wy = wanted
    gx = helpers.div(dz, y) if wx else None
    gy = mul(dz, helpers.div(helpers.div(neg(x), y), y)) if wy else None
    return unbroadcast(x, y, gx, gy)


@RegisterGradient("FloorMod")
def _floor_mod_grad(op, dz, *, wanted):
    # x mod y = x - floor(x / y) * y
    x, y = op.inputs
    wx, wy = wanted
    gy = mul(neg(dz), run("FloorDiv", [x, y])) if wy else None
    return unbroadcast(x, y, dz if wx else None, gy)


@RegisterGradient("Pow")
def _pow_grad(op, dz, *, wanted):
    x, y = op.inputs
    z = op.outputs[0]
    wx, wy = wanted
    gx = gy = None
    if wx:
        one = scalar(1, x.dtype)
        gx = mul(dz, mul(y, run("Pow", [x, helpers.sub(y, one)])))
    if wy:
        # d/dy x**y = x**y log x, taken as 0 where x <= 0 (log undefined); the
        # safe x keeps log's own gradient finite there.
        positive = run("Greater", [x, scalar(0, x.dtype)])
        safe_x = helpers.select(positive, x, scalar(1, x.dtype))
        log_x = helpers.select(positive, run("Log", [safe_x]), scalar(0, x.dtype))
        gy = mul(dz, mul(z, log_x))
    return unbroadcast(x, y, gx, gy)


def _min_max_grad(op, dz, compare, wanted):
    x, y = op.inputs
    wx, wy = wanted
    x_wins = run(compare, [x, y])  # ties go to x
    zero = scalar(0, dz.dtype)
    gx = helpers.select(x_wins, dz, zero) if wx else None
    gy = helpers.select(x_wins, zero, dz) if wy else None
    return (None if gx is None else helpers.reduce_to(gx, x)), (None if gy is None else helpers.reduce_to(gy, y))


@RegisterGradient("Maximum")
def _maximum_grad(op, dz, *, wanted):
    return _min_max_grad(op, dz, "GreaterEqual", wanted)


@RegisterGradient("Minimum")
def _minimum_grad(op, dz, *, wanted):
    return _min_max_grad(op, dz, "LessEqual", wanted)


@RegisterGradient("AddN")
def _add_n_grad(op, dz):
    return [dz] * len(op.inputs)


# ---------------------------------------------------------------- unary math

RegisterBatchingRule("Neg", "Abs", "Sign", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Reciprocal", "Tanh", "Sigmoid",
                     "Cast")(bh.same_op)
RegisterBatchingRule("TanhGrad", "SigmoidGrad")(bh.same_shapes)

@RegisterGradient("Neg")
def _neg_grad(op, dz):
    return [neg(dz)]


@RegisterGradient("Abs")
def _abs_grad(op, dz):
    return [mul(dz, run("Sign", [op.inputs[0]]))]


@RegisterGradient("Sign")
def _sign_grad(op, dz):
    return [helpers.zeros_like(op.inputs[0])]  # zero wherever it is defined


@RegisterGradient("Square")
def _square_grad(op, dz):
    x = op.inputs[0]
    return [mul(dz, mul(x, scalar(2, x.dtype)))]


@RegisterGradient("Sqrt")
def _sqrt_grad(op, dz):
    y = op.outputs[0]
    return [helpers.div(mul(dz, scalar(0.5, y.dtype)), y)]


@RegisterGradient("Rsqrt")
def _rsqrt_grad(op, dz):
    y = op.outputs[0]
    return [mul(mul(dz, scalar(-0.5, y.dtype)), mul(y, mul(y, y)))]


@RegisterGradient("Exp")
def _exp_grad(op, dz):
    return [mul(dz, op.outputs[0])]


@RegisterGradient("Log")
def _log_grad(op, dz):
    return [helpers.div(dz, op.inputs[0])]


@RegisterGradient("Reciprocal")
def _reciprocal_grad(op, dz):
    y = op.outputs[0]
    return [mul(neg(dz), mul(y, y))]


@RegisterGradient("Tanh")
def _tanh_grad(op, dz):
    return [helpers.run("TanhGrad", [op.outputs[0], dz])]


@RegisterGradient("Sigmoid")
def _sigmoid_grad(op, dz):
    return [helpers.run("SigmoidGrad", [op.outputs[0], dz])]


@RegisterGradient("TanhGrad")
def _tanh_grad_grad(op, ddz):
    # z = dy * (1 - y^2): dz/dy = -2 y dy, dz/d(dy) = 1 - y^2.
    y, dy = op.inputs
    return [mul(ddz, mul(scalar(-2, y.dtype), mul(y, dy))), helpers.run("TanhGrad", [y, ddz])]


@RegisterGradient("SigmoidGrad")
def _sigmoid_grad_grad(op, ddz):
    # z = dy * y * (1 - y): dz/dy = dy (1 - 2 y), dz/d(dy) = y (1 - y).
    y, dy = op.inputs
    return [mul(ddz, mul(dy, helpers.sub(scalar(1, y.dtype), mul(scalar(2, y.dtype), y)))),
            helpers.run("SigmoidGrad", [y, ddz])]


@RegisterGradient("Cast")
def _cast_grad(op, dz):
    src = op.inputs[0].dtype
    if src.is_floating and dz.dtype.is_floating:
        return [helpers.cast(dz, src)]
    return [None]


# ---------------------------------------------------------------- matmul

@RegisterBatchingRule("MatMul")
def _matmul_batched(ctx, op, inputs, batched):
    a, b = inputs
    if batched[0] and not batched[1] and not get_attr(op, "transpose_a"):
        # Every example's rows times the shared matrix: one matmul of all rows.
        k = helpers.static_shape(a)[-1]
        rows = helpers.reshape(a, ints([-1, k]) if k is not None else run(
            "ConcatV2", [ints([-1]), _dims(a, 2), scalar(0, dtypes.int32)]))
        product = run("MatMul", [rows, b], {"transpose_b": get_attr(op, "transpose_b")})
        m, n = op.outputs[0].shape.as_tuple()
        if m is not None and n is not None:
            return [helpers.reshape(product, ints([-1, m, n]))]
        # [-1, m, n]: m from a's shape, n from the product's.
        out_shape = run("ConcatV2", [ints([-1]), _dims(a, 1), _dims(product, 1), scalar(0, dtypes.int32)])
        return [helpers.reshape(product, out_shape)]
    # Otherwise a batched matmul; an unbatched operand broadcasts over the batch.
    return [run("BatchMatMulV2", [a, b], {"adj_x": get_attr(op, "transpose_a"), "adj_y": get_attr(op, "transpose_b")})]


def _dims(t, i):
    """[t.shape[i]] as an int32 vector."""
    return run("StridedSlice", [helpers.shape(t), ints([i]), ints([i + 1]), ints([1])])


@RegisterBatchingRule("BatchMatMulV2")
def _batch_matmul_batched(ctx, op, inputs, batched):
    return bh.reemit(op, bh.broadcastable(op, inputs, batched))


def _product_grads(mm, a, b, dz, ta, tb, wanted):
    """The gradients of op(a) op(b) (op: transposed where ta/tb say) with
    respect to a and b, each None when not `wanted`; `mm(x, y, tx, ty)` makes
    the product op(x) op(y) with the op's own kind of matmul."""
    wa, wb = wanted
    # The operands of each gradient's product, by (ta, tb).
    ga_args, gb_args = {
        (False, False): ((dz, b, False, True), (a, dz, True, False)),
        (False, True): ((dz, b, False, False), (dz, a, True, False)),
        (True, False): ((b, dz, False, True), (a, dz, False, False)),
        (True, True): ((b, dz, True, True), (dz, a, True, True)),
    }[(bool(ta), bool(tb))]
    return (mm(*ga_args) if wa else None), (mm(*gb_args) if wb else None)


@RegisterGradient("MatMul")
def _matmul_grad(op, dz, *, wanted):
    a, b = op.inputs
    return _product_grads(lambda x, y, tx, ty: run("MatMul", [x, y], {"transpose_a": tx, "transpose_b": ty}),
                          a, b, dz, get_attr(op, "transpose_a"), get_attr(op, "transpose_b"), wanted)


@RegisterGradient("BatchMatMulV2")
def _batch_matmul_grad(op, dz, *, wanted):
    a, b = op.inputs
    ga, gb = _product_grads(lambda x, y, tx, ty: run("BatchMatMulV2", [x, y], {"adj_x": tx, "adj_y": ty}),
                            a, b, dz, get_attr(op, "adj_x"), get_attr(op, "adj_y"), wanted)
    # Batch dimensions broadcast: sum each gradient back to its input's shape.
    return (None if ga is None else helpers.reduce_to(ga, a)), (None if gb is None else helpers.reduce_to(gb, b))


# ---------------------------------------------------------------- reductions

RegisterBatchingRule("Sum", "Mean", "Max", "Min", "Prod")(bh.axis_input_shifted)

def _broadcast_back(g, x, axes, keep_dims):
    """g (the gradient of a reduction of x over axes) broadcast to x's shape."""
    if not keep_dims and helpers.static_shape(g) != ():  # a scalar broadcasts as it is
        g = helpers.reshape(g, helpers.kept_dims_shape(x, axes))
    return run("BroadcastTo", [g, helpers.shape(x)])


@RegisterGradient("Sum")
def _sum_grad(op, dz):
    x, axes = op.inputs
    return _broadcast_back(dz, x, axes, get_attr(op, "keep_dims")), None


def _reduced_count(x, y):
    """How many elements of x went into each element of its reduction y, in x's dtype."""
    xs, ys = helpers.static_shape(x), helpers.static_shape(y)
    if helpers.fully_known(xs) and helpers.fully_known(ys):
        n = math.prod(xs) // max(math.prod(ys), 1)
        return scalar(max(n, 1), x.dtype)
    size_x = run("Size", [x], {"out_type": dtypes.int32})
    size_y = run("Size", [y], {"out_type": dtypes.int32})
    n = run("Maximum", [run("FloorDiv", [size_x, run("Maximum", [size_y, scalar(1, dtypes.int32)])]),
                        scalar(1, dtypes.int32)])
    return helpers.cast(n, x.dtype)


@RegisterGradient("Mean")
def _mean_grad(op, dz):
    x, axes = op.inputs
    g = _broadcast_back(dz, x, axes, get_attr(op, "keep_dims"))
    return helpers.div(g, _reduced_count(x, op.outputs[0])), None


def _extremum_grad(op, dz):
    # The gradient is shared equally by the elements that attain the extremum.
    x, axes = op.inputs
    keep = get_attr(op, "keep_dims")
    y = op.outputs[0]
    if not keep:
        kept = helpers.kept_dims_shape(x, axes)
        y = helpers.reshape(y, kept)
        dz = helpers.reshape(dz, kept)
    hits = helpers.cast(run("Equal", [x, y]), x.dtype)
    count = helpers.reduce_sum(hits, axes, keepdims=True)
    return mul(helpers.div(hits, count), dz), None


RegisterGradient("Max")(_extremum_grad)
RegisterGradient("Min")(_extremum_grad)


@RegisterGradient("Prod")
def _prod_grad(op, dz):
    # d prod / d x_i is the product of the other elements. With p the product
    # of the non-zero elements and c the number of zeros in the reduction:
    # x_i != 0: p / x_i if c == 0, else 0;  x_i == 0: p if c == 1, else 0.
    x, axes = op.inputs
    keep = get_attr(op, "keep_dims")
    zero, one = scalar(0, x.dtype), scalar(1, x.dtype)
    is_zero = run("Equal", [x, zero])
    p = run("Prod", [helpers.select(is_zero, one, x), axes], {"keep_dims": True})
    c = run("Sum", [helpers.cast(is_zero, x.dtype), axes], {"keep_dims": True})
    safe_x = helpers.select(is_zero, one, x)
    at_nonzero = helpers.select(run("Equal", [c, zero]), helpers.div(p, safe_x), zero)
    at_zero = helpers.select(run("Equal", [c, one]), run("BroadcastTo", [p, helpers.shape(x)]), zero)
    others = helpers.select(is_zero, at_zero, at_nonzero)
    if not keep:
        dz = helpers.reshape(dz, helpers.kept_dims_shape(x, axes))
    return mul(others, dz), None
