"""Gradient rules of the arithmetic, elementwise math, matmul and reduction ops."""

import math

from treadle.autodiff import _ops
from treadle.autodiff._ops import mul, neg, run, scalar, unbroadcast
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr, input_wanted
from treadle.framework import dtypes

NotDifferentiable(
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot", "BitwiseAnd", "BitwiseOr", "Invert",
    "All", "Any", "ArgMax", "ArgMin",
    "FloorDiv",  # piecewise constant; TensorFlow gives None too
    "BroadcastGradientArgs", "InvertPermutation",
)


def _wants():
    return input_wanted(0), input_wanted(1)


# ---------------------------------------------------------------- binary arithmetic

@RegisterGradient("AddV2", "Add")  # Add: TensorFlow's op for strings, the same rule for numbers
def _add_grad(op, dz):
    wx, wy = _wants()
    return unbroadcast(op.inputs[0], op.inputs[1], dz if wx else None, dz if wy else None)


@RegisterGradient("Sub")
def _sub_grad(op, dz):
    wx, wy = _wants()
    return unbroadcast(op.inputs[0], op.inputs[1], dz if wx else None, neg(dz) if wy else None)


@RegisterGradient("Mul")
def _mul_grad(op, dz):
    x, y = op.inputs
    wx, wy = _wants()
    return unbroadcast(x, y, mul(dz, y) if wx else None, mul(x, dz) if wy else None)


@RegisterGradient("RealDiv")
def _real_div_grad(op, dz):
    x, y = op.inputs
    wx, wy = _wants()
    gx = _ops.div(dz, y) if wx else None
    gy = mul(dz, _ops.div(_ops.div(neg(x), y), y)) if wy else None
    return unbroadcast(x, y, gx, gy)


@RegisterGradient("FloorMod")
def _floor_mod_grad(op, dz):
    # x mod y = x - floor(x / y) * y
    x, y = op.inputs
    wx, wy = _wants()
    gy = mul(neg(dz), run("FloorDiv", [x, y])) if wy else None
    return unbroadcast(x, y, dz if wx else None, gy)


@RegisterGradient("Pow")
def _pow_grad(op, dz):
    x, y = op.inputs
    z = op.outputs[0]
    wx, wy = _wants()
    gx = gy = None
    if wx:
        one = scalar(1, x.dtype)
        gx = mul(dz, mul(y, run("Pow", [x, _ops.sub(y, one)])))
    if wy:
        # d/dy x**y = x**y log x, taken as 0 where x <= 0 (log undefined); the
        # safe x keeps log's own gradient finite there.
        positive = run("Greater", [x, scalar(0, x.dtype)])
        safe_x = _ops.select(positive, x, scalar(1, x.dtype))
        log_x = _ops.select(positive, run("Log", [safe_x]), scalar(0, x.dtype))
        gy = mul(dz, mul(z, log_x))
    return unbroadcast(x, y, gx, gy)


def _min_max_grad(op, dz, compare):
    x, y = op.inputs
    wx, wy = _wants()
    x_wins = run(compare, [x, y])  # ties go to x
    zero = scalar(0, dz.dtype)
    gx = _ops.select(x_wins, dz, zero) if wx else None
    gy = _ops.select(x_wins, zero, dz) if wy else None
    return (None if gx is None else _ops.reduce_to(gx, x)), (None if gy is None else _ops.reduce_to(gy, y))


@RegisterGradient("Maximum")
def _maximum_grad(op, dz):
    return _min_max_grad(op, dz, "GreaterEqual")


@RegisterGradient("Minimum")
def _minimum_grad(op, dz):
    return _min_max_grad(op, dz, "LessEqual")


@RegisterGradient("AddN")
def _add_n_grad(op, dz):
    return [dz] * len(op.inputs)


# ---------------------------------------------------------------- unary math

@RegisterGradient("Neg")
def _neg_grad(op, dz):
    return [neg(dz)]


@RegisterGradient("Abs")
def _abs_grad(op, dz):
    return [mul(dz, run("Sign", [op.inputs[0]]))]


@RegisterGradient("Sign")
def _sign_grad(op, dz):
    return [_ops.zeros_like(op.inputs[0])]  # zero wherever it is defined


@RegisterGradient("Square")
def _square_grad(op, dz):
    x = op.inputs[0]
    return [mul(dz, mul(x, scalar(2, x.dtype)))]


@RegisterGradient("Sqrt")
def _sqrt_grad(op, dz):
    y = op.outputs[0]
    return [_ops.div(mul(dz, scalar(0.5, y.dtype)), y)]


@RegisterGradient("Rsqrt")
def _rsqrt_grad(op, dz):
    y = op.outputs[0]
    return [mul(mul(dz, scalar(-0.5, y.dtype)), mul(y, mul(y, y)))]


@RegisterGradient("Exp")
def _exp_grad(op, dz):
    return [mul(dz, op.outputs[0])]


@RegisterGradient("Log")
def _log_grad(op, dz):
    return [_ops.div(dz, op.inputs[0])]


@RegisterGradient("Reciprocal")
def _reciprocal_grad(op, dz):
    y = op.outputs[0]
    return [mul(neg(dz), mul(y, y))]


@RegisterGradient("Tanh")
def _tanh_grad(op, dz):
    return [_ops.run("TanhGrad", [op.outputs[0], dz])]


@RegisterGradient("Sigmoid")
def _sigmoid_grad(op, dz):
    return [_ops.run("SigmoidGrad", [op.outputs[0], dz])]


@RegisterGradient("TanhGrad")
def _tanh_grad_grad(op, ddz):
    # z = dy * (1 - y^2): dz/dy = -2 y dy, dz/d(dy) = 1 - y^2.
    y, dy = op.inputs
    return [mul(ddz, mul(scalar(-2, y.dtype), mul(y, dy))), _ops.run("TanhGrad", [y, ddz])]


@RegisterGradient("SigmoidGrad")
def _sigmoid_grad_grad(op, ddz):
    # z = dy * y * (1 - y): dz/dy = dy (1 - 2 y), dz/d(dy) = y (1 - y).
    y, dy = op.inputs
    return [mul(ddz, mul(dy, _ops.sub(scalar(1, y.dtype), mul(scalar(2, y.dtype), y)))),
            _ops.run("SigmoidGrad", [y, ddz])]


@RegisterGradient("Cast")
def _cast_grad(op, dz):
    src = op.inputs[0].dtype
    if src.is_floating and dz.dtype.is_floating:
        return [_ops.cast(dz, src)]
    return [None]


# ---------------------------------------------------------------- matmul

def _product_grads(mm, a, b, dz, ta, tb):
    """The gradients of op(a) op(b) (op: transposed where ta/tb say) with
    respect to a and b, each None when not wanted; `mm(x, y, tx, ty)` makes
    the product op(x) op(y) with the op's own kind of matmul."""
    wa, wb = _wants()
    # The operands of each gradient's product, by (ta, tb).
    ga_args, gb_args = {
        (False, False): ((dz, b, False, True), (a, dz, True, False)),
        (False, True): ((dz, b, False, False), (dz, a, True, False)),
        (True, False): ((b, dz, False, True), (a, dz, False, False)),
        (True, True): ((b, dz, True, True), (dz, a, True, True)),
    }[(bool(ta), bool(tb))]
    return (mm(*ga_args) if wa else None), (mm(*gb_args) if wb else None)


@RegisterGradient("MatMul")
def _matmul_grad(op, dz):
    a, b = op.inputs
    return _product_grads(lambda x, y, tx, ty: run("MatMul", [x, y], {"transpose_a": tx, "transpose_b": ty}),
                          a, b, dz, get_attr(op, "transpose_a"), get_attr(op, "transpose_b"))


@RegisterGradient("BatchMatMulV2")
def _batch_matmul_grad(op, dz):
    a, b = op.inputs
    ga, gb = _product_grads(lambda x, y, tx, ty: run("BatchMatMulV2", [x, y], {"adj_x": tx, "adj_y": ty}),
                            a, b, dz, get_attr(op, "adj_x"), get_attr(op, "adj_y"))
    # Batch dimensions broadcast: sum each gradient back to its input's shape.
    return (None if ga is None else _ops.reduce_to(ga, a)), (None if gb is None else _ops.reduce_to(gb, b))


# ---------------------------------------------------------------- reductions

def _broadcast_back(g, x, axes, keep_dims):
    """g (the gradient of a reduction of x over axes) broadcast to x's shape."""
    if not keep_dims and _ops.static_shape(g) != ():  # a scalar broadcasts as it is
        g = _ops.reshape(g, _ops.kept_dims_shape(x, axes))
    return run("BroadcastTo", [g, _ops.shape(x)])


@RegisterGradient("Sum")
def _sum_grad(op, dz):
    x, axes = op.inputs
    return _broadcast_back(dz, x, axes, get_attr(op, "keep_dims")), None


def _reduced_count(x, y):
    """How many elements of x went into each element of its reduction y, in x's dtype."""
    xs, ys = _ops.static_shape(x), _ops.static_shape(y)
    if _ops.fully_known(xs) and _ops.fully_known(ys):
        n = math.prod(xs) // max(math.prod(ys), 1)
        return scalar(max(n, 1), x.dtype)
    size_x = run("Size", [x], {"out_type": dtypes.int32})
    size_y = run("Size", [y], {"out_type": dtypes.int32})
    n = run("Maximum", [run("FloorDiv", [size_x, run("Maximum", [size_y, scalar(1, dtypes.int32)])]),
                        scalar(1, dtypes.int32)])
    return _ops.cast(n, x.dtype)


@RegisterGradient("Mean")
def _mean_grad(op, dz):
    x, axes = op.inputs
    g = _broadcast_back(dz, x, axes, get_attr(op, "keep_dims"))
    return _ops.div(g, _reduced_count(x, op.outputs[0])), None


def _extremum_grad(op, dz):
    # The gradient is shared equally by the elements that attain the extremum.
    x, axes = op.inputs
    keep = get_attr(op, "keep_dims")
    y = op.outputs[0]
    if not keep:
        kept = _ops.kept_dims_shape(x, axes)
        y = _ops.reshape(y, kept)
        dz = _ops.reshape(dz, kept)
    hits = _ops.cast(run("Equal", [x, y]), x.dtype)
    count = _ops.reduce_sum(hits, axes, keepdims=True)
    return mul(_ops.div(hits, count), dz), None


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
    p = run("Prod", [_ops.select(is_zero, one, x), axes], {"keep_dims": True})
    c = run("Sum", [_ops.cast(is_zero, x.dtype), axes], {"keep_dims": True})
    safe_x = _ops.select(is_zero, one, x)
    at_nonzero = _ops.select(run("Equal", [c, zero]), _ops.div(p, safe_x), zero)
    at_zero = _ops.select(run("Equal", [c, one]), run("BroadcastTo", [p, _ops.shape(x)]), zero)
    others = _ops.select(is_zero, at_zero, at_nonzero)
    if not keep:
        dz = _ops.reshape(dz, _ops.kept_dims_shape(x, axes))
    return mul(others, dz), None
