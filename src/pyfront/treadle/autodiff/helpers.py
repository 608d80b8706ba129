"""Helpers the gradient rules share: thin calls of `execute` (so they run
eagerly or add graph nodes), static shapes where they are known and shape ops
where they are not."""

import numpy as np

from treadle.framework import context, dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, convert_to_tensor
from treadle.framework.tensor_util import constant_value
from treadle.ops.array_ops import _index_constant


def run(op_name, inputs, attrs=None):
    return execute(op_name, inputs, attrs)[0]


def run_all(op_name, inputs, attrs=None):
    return execute(op_name, inputs, attrs)


# ---------------------------------------------------------------- constants and shapes

_SCALARS = {}


def scalar(value, dtype):
    """A scalar constant of `dtype` (cached in eager mode; a Const node while tracing)."""
    if context.current_graph() is not None:
        return convert_to_tensor(value, dtype=dtype)
    key = (value, dtype)
    t = _SCALARS.get(key)
    if t is None:
        t = _SCALARS[key] = convert_to_tensor(value, dtype=dtype)
    return t


def ints(values):
    """An int32 vector (or scalar, for an int) constant."""
    return _index_constant(tuple(int(v) for v in values) if not isinstance(values, int) else values)


def static_shape(t):
    """The static shape as a tuple of ints and Nones, or None for an unknown rank."""
    if type(t) is EagerTensor:
        return t._shape_tuple()
    return t.shape.as_tuple()


def fully_known(shape):
    return shape is not None and None not in shape


def shape(t):
    """t's shape as an int32 vector: a constant when it is statically known."""
    if t.dtype == dtypes.variant:
        return ints(())  # tensor lists are scalars
    s = static_shape(t)
    if fully_known(s):
        return ints(s)
    return run("Shape", [t], {"out_type": dtypes.int32})


def rank(t):
    s = static_shape(t)
    if s is not None:
        return ints(len(s))
    return run("Rank", [t])


const_value = constant_value


# ---------------------------------------------------------------- arithmetic

def add(x, y):
    return run("AddV2", [x, y])


def sub(x, y):
    return run("Sub", [x, y])


def mul(x, y):
    return run("Mul", [x, y])


def div(x, y):
    return run("RealDiv", [x, y])


def neg(x):
    return run("Neg", [x])


def cast(x, dtype):
    if x.dtype == dtype:
        return x
    return run("Cast", [x], {"DstT": dtype})


def reshape(x, shape_tensor):
    return run("Reshape", [x, shape_tensor])


def reduce_sum(x, axes, keepdims=False):
    return run("Sum", [x, axes], {"keep_dims": keepdims})


def zeros_like(t):
    if t.dtype == dtypes.variant:
        return run("TensorListZerosLike", [t])  # a list of as many unwritten (zero) items
    return run("ZerosLike", [t])


def select(cond, t, e):
    return run("SelectV2", [cond, t, e])


def add_n(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    if values[0].dtype == dtypes.variant:
        return run("TensorListAddN", values)
    return run("AddN", values)


# ---------------------------------------------------------------- broadcasting

def _broadcast_axes(x_shape, g_shape):
    """Axes of g (a broadcast of x) to sum over to get back x's shape."""
    rank = len(g_shape)
    off = rank - len(x_shape)
    return [i for i in range(rank) if i < off or (x_shape[i - off] == 1 and g_shape[i] != 1)]


def reduce_to(g, x):
    """Sums g, a gradient of the broadcast shape, back to the shape of x."""
    xs, gs = static_shape(x), static_shape(g)
    if fully_known(xs) and fully_known(gs):
        if xs == gs:
            return g
        axes = _broadcast_axes(xs, gs)
        if axes:
            g = reduce_sum(g, ints(axes))
        if static_shape(g) != xs:
            g = reshape(g, ints(xs))
        return g
    x_shape = shape(x)
    axes = execute("BroadcastGradientArgs", [x_shape, shape(g)])[0]
    return reshape(reduce_sum(g, axes), x_shape)


def unbroadcast(x, y, gx, gy):
    """gx and gy (gradients of the broadcast shape of x and y, or None where
    not wanted) summed back to the shapes of x and y."""
    xs, ys = static_shape(x), static_shape(y)
    if fully_known(xs) and fully_known(ys):
        if xs == ys:
            return gx, gy
        return (None if gx is None else reduce_to(gx, x)), (None if gy is None else reduce_to(gy, y))
    sx, sy = shape(x), shape(y)
    rx, ry = execute("BroadcastGradientArgs", [sx, sy])
    out_x = None if gx is None else reshape(reduce_sum(gx, rx), sx)
    out_y = None if gy is None else reshape(reduce_sum(gy, ry), sy)
    return out_x, out_y


# ---------------------------------------------------------------- reductions

def kept_dims_shape(x, axes):
    """The shape of a reduction of x over `axes` with keep_dims: x's shape with 1 at each reduced axis."""
    xs = static_shape(x)
    axes_value = const_value(axes)
    if fully_known(xs) and axes_value is not None:
        r = len(xs)
        reduced = {int(a) % r for a in np.ravel(axes_value)} if r else set()
        return ints([1 if i in reduced else d for i, d in enumerate(xs)])
    # Unknown: compare every position with the (normalised) axes.
    x_shape = shape(x)
    r = run("Size", [x_shape], {"out_type": dtypes.int32})
    axes = cast(axes, dtypes.int32)
    normalized = run("FloorMod", [add(axes, r), r])
    positions = run("Range", [scalar(0, dtypes.int32), r, scalar(1, dtypes.int32)])
    hit = run("Equal", [run("ExpandDims", [positions, scalar(1, dtypes.int32)]),
                        run("Reshape", [normalized, ints((1, -1))])])
    mask = run("Any", [hit, scalar(1, dtypes.int32)], {"keep_dims": False})
    return select(mask, scalar(1, dtypes.int32), x_shape)


def all_axes(t):
    """Every axis of t, as an int32 vector."""
    s = static_shape(t)
    if s is not None:
        return ints(range(len(s)))
    return run("Range", [scalar(0, dtypes.int32), run("Rank", [t]), scalar(1, dtypes.int32)])
