"""Math wrappers TensorFlow users reach for when porting: cumulative sums and
products with TensorFlow's defaults, clipping, norms, log-sum-exp, and the
parts of td.linalg built from existing ops."""

from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.ops import array_ops, math_ops
from treadle.ops.array_ops import _int_scalar, _tensor

_ops = math_ops.OPERATOR_FUNCTIONS


def _run1(op_name, inputs, attrs=None, name=None):
    return execute(op_name, inputs, attrs, name=name)[0]


# ---------------------------------------------------------------- scans

def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sums of x along `axis` (exclusive: each leaves itself out; reverse: from the end)."""
    return _run1("Cumsum", [_tensor(x), _int_scalar(axis, "axis")],
                 {"exclusive": bool(exclusive), "reverse": bool(reverse)}, name=name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running products of x along `axis` (exclusive: each leaves itself out; reverse: from the end)."""
    return _run1("Cumprod", [_tensor(x), _int_scalar(axis, "axis")],
                 {"exclusive": bool(exclusive), "reverse": bool(reverse)}, name=name)


# ---------------------------------------------------------------- clipping

def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """t with each element limited to [clip_value_min, clip_value_max]."""
    t = _tensor(t)
    low = convert_to_tensor(clip_value_min, dtype_hint=t.dtype)
    high = convert_to_tensor(clip_value_max, dtype_hint=t.dtype)
    return _run1("Minimum", [_run1("Maximum", [t, low]), high], name=name)


def _l2(t, axes=None, keepdims=False):
    return _run1("Sqrt", [math_ops.reduce_sum(_run1("Square", [t]), axis=axes, keepdims=keepdims)])


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t scaled so that its L2 norm (over `axes`, all by default) is at most clip_norm."""
    t = _tensor(t)
    clip_norm = convert_to_tensor(clip_norm, dtype_hint=t.dtype)
    l2sum = math_ops.reduce_sum(_run1("Square", [t]), axis=axes, keepdims=True)
    # Where the norm is 0 nothing is scaled; the safe sum keeps sqrt's gradient finite.
    positive = _ops["greater"](l2sum, 0)
    safe = array_ops.where(positive, l2sum, array_ops.ones_like(l2sum))
    norm = array_ops.where(positive, _run1("Sqrt", [safe]), l2sum)
    scaled = _ops["multiply"](t, clip_norm)
    return _run1("RealDiv", [scaled, _run1("Maximum", [norm, clip_norm])], name=name)


def global_norm(t_list, name=None):
    """sqrt(sum of the squared L2 norms of the tensors in t_list); None entries are skipped."""
    values = [_tensor(t) for t in t_list if t is not None]
    if not values:
        raise ValueError("global_norm: t_list has no tensors")
    sums = [math_ops.reduce_sum(_run1("Square", [v])) for v in values]
    return _run1("Sqrt", [math_ops.add_n(sums)], name=name)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(t_list scaled by clip_norm / max(global_norm, clip_norm), global_norm);
    None entries stay None. As in TensorFlow, a non-finite norm gives NaNs."""
    if isinstance(t_list, Tensor) or not isinstance(t_list, (list, tuple)):
        raise TypeError("clip_by_global_norm: t_list should be a sequence of tensors")
    norm = global_norm(t_list) if use_norm is None else _tensor(use_norm)
    clip_norm = convert_to_tensor(clip_norm, dtype_hint=norm.dtype)
    scale = _run1("RealDiv", [clip_norm, _run1("Maximum", [norm, clip_norm])])
    clipped = [None if t is None else _ops["multiply"](_tensor(t), math_ops.cast(scale, _tensor(t).dtype))
               for t in t_list]
    return clipped, norm


# ---------------------------------------------------------------- norms and log-sum-exp

def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002 (TensorFlow's name)
    """Vector norms: "euclidean" (2), 1, 2 and inf; over all elements, one axis, or
    (Frobenius only) a pair of axes."""
    tensor = _tensor(tensor)
    keepdims = bool(keepdims)
    pair = isinstance(axis, (list, tuple)) and len(axis) == 2
    if ord in ("euclidean", "fro", 2) and (ord != "fro" or pair or axis is None):
        if ord == 2 and pair:
            raise NotImplementedError("td.norm: the matrix 2-norm (largest singular value) is not supported")
        return _l2(tensor, axes=axis, keepdims=keepdims) if name is None else \
            array_ops.identity(_l2(tensor, axes=axis, keepdims=keepdims), name=name)
    if pair:
        raise NotImplementedError(f"td.norm: matrix norm ord={ord!r} is not supported")
    absolute = _run1("Abs", [tensor])
    if ord == 1:
        return math_ops.reduce_sum(absolute, axis=axis, keepdims=keepdims, name=name)
    if ord == float("inf"):
        return math_ops.reduce_max(absolute, axis=axis, keepdims=keepdims, name=name)
    raise ValueError(f"td.norm: ord must be 'euclidean', 'fro', 1, 2 or inf, got {ord!r}")


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis`, computed without overflow (the maximum is taken out first)."""
    x = _tensor(input_tensor)
    top = math_ops.reduce_max(x, axis=axis, keepdims=True)
    # The shift is a constant for differentiation (the result does not depend
    # on it); an infinite maximum is not shifted out.
    finite = _run1("StopGradient", [array_ops.where(_is_finite(top), top, array_ops.zeros_like(top))])
    summed = math_ops.reduce_sum(_run1("Exp", [_ops["subtract"](x, finite)]), axis=axis, keepdims=True)
    out = _ops["add"](_run1("Log", [summed]), finite)
    if not keepdims:
        out = _squeeze_reduced(out, x, axis)
    return out if name is None else array_ops.identity(out, name=name)


def _is_finite(t):
    # |t| < inf, and t == t (not NaN).
    return _ops["and"](_run1("Less", [_run1("Abs", [t]), convert_to_tensor(float("inf"), dtype=t.dtype)]),
                       _run1("Equal", [t, t]))


def _squeeze_reduced(out, x, axis):
    if axis is None:
        return array_ops.reshape(out, [])
    axes = [axis] if isinstance(axis, int) else list(axis)
    return array_ops.squeeze(out, axis=axes)


PUBLIC = {"": ["cumsum", "cumprod", "clip_by_value", "clip_by_norm", "clip_by_global_norm", "norm"],
          "math": ["cumsum", "cumprod", "reduce_logsumexp"]}
