"""Array wrappers TensorFlow users reach for when porting: padding, reversing
and rolling, index-tuple gathers and scatters, masks, meshgrid, identity_n and
ensure_shape. Each runs registered ops through `execute`, so it builds graph
nodes while a function is traced, and gradients come from the ops' rules."""

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.ops import array_ops, math_ops
from treadle.ops.array_ops import _int_scalar, _int_vector, _tensor


def _run1(op_name, inputs, attrs=None, name=None):
    return execute(op_name, inputs, attrs, name=name)[0]


def _index_tensor(value, what):
    t = convert_to_tensor(value, dtype_hint=dtypes.int32)
    if not t.dtype.is_integer:
        raise TypeError(f"`{what}` must be an integer tensor, got {t.dtype.name}")
    return t


# ---------------------------------------------------------------- reordering and padding

def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """`tensor` inside a border: paddings[k] = [before, after] for dimension k.
    Only mode "CONSTANT" is supported (REFLECT and SYMMETRIC raise)."""
    if str(mode).upper() != "CONSTANT":
        raise NotImplementedError(f"td.pad: mode {mode!r} is not supported; treadle pads with constants only")
    tensor = _tensor(tensor)
    value = convert_to_tensor(constant_values, dtype=tensor.dtype) if not isinstance(constant_values, Tensor) \
        else constant_values
    return _run1("PadV2", [tensor, _index_tensor(paddings, "paddings"), value], name=name)


def reverse(tensor, axis, name=None):
    """`tensor` with its elements in reverse order along each axis of `axis` (a list)."""
    return _run1("ReverseV2", [_tensor(tensor), _int_vector(axis, "axis")], name=name)


def roll(input, shift, axis, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`input` rotated by `shift` places along `axis` (ints, or lists of the same length)."""
    return _run1("Roll", [_tensor(input), _index_tensor(shift, "shift"), _index_tensor(axis, "axis")], name=name)


# ---------------------------------------------------------------- index tuples

def gather_nd(params, indices, batch_dims=0, name=None):
    """The slices of `params` named by the index tuples in the last dimension of `indices`."""
    if batch_dims != 0:
        raise NotImplementedError("td.gather_nd: batch_dims other than 0 is not supported")
    return _run1("GatherNd", [_tensor(params), _index_tensor(indices, "indices")], name=name)


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of `shape` with `updates` added at the index tuples of `indices`."""
    indices = _index_tensor(indices, "indices")
    shape = math_ops.cast(_int_vector(shape, "shape"), indices.dtype)
    return _run1("ScatterNd", [indices, _tensor(updates), shape], name=name)


def _tensor_scatter(op_name):
    def fn(tensor, indices, updates, name=None):
        tensor = _tensor(tensor)
        updates = convert_to_tensor(updates, dtype_hint=tensor.dtype)
        return _run1(op_name, [tensor, _index_tensor(indices, "indices"), updates], name=name)
    return fn


tensor_scatter_nd_update = _tensor_scatter("TensorScatterUpdate")
tensor_scatter_nd_add = _tensor_scatter("TensorScatterAdd")
tensor_scatter_nd_sub = _tensor_scatter("TensorScatterSub")
tensor_scatter_nd_update.__doc__ = "A copy of `tensor` with the slices at `indices` replaced by `updates`."
tensor_scatter_nd_add.__doc__ = "A copy of `tensor` with `updates` added at `indices`."
tensor_scatter_nd_sub.__doc__ = "A copy of `tensor` with `updates` subtracted at `indices`."


# ---------------------------------------------------------------- masks

def boolean_mask(tensor, mask, axis=None, name=None):
    """The elements (or slices) of `tensor` where the boolean `mask` is True;
    mask's shape must match the dimensions of tensor it covers (from `axis`)."""
    tensor, mask = _tensor(tensor), convert_to_tensor(mask, dtype=dtypes.bool)
    k = mask.shape.rank
    if k is None:
        raise ValueError("td.boolean_mask: the rank of mask must be known")
    if k == 0:
        raise ValueError("td.boolean_mask: mask cannot be a scalar")
    axis = 0 if axis is None else int(axis)
    if not tensor.shape[axis:axis + k].is_compatible_with(mask.shape):
        raise ValueError(f"td.boolean_mask: mask of shape {mask.shape} does not match the dimensions "
                         f"{axis}..{axis + k - 1} of tensor of shape {tensor.shape}")
    shape = array_ops.shape(tensor)
    # Merge the masked dimensions into one, then gather the positions where mask holds.
    leading, masked, trailing = shape[:axis], math_ops.reduce_prod(shape[axis:axis + k], keepdims=True), \
        shape[axis + k:]
    flat = array_ops.reshape(tensor, array_ops.concat([leading, masked, trailing], 0))
    positions = array_ops.reshape(array_ops.where(array_ops.reshape(mask, [-1])), [-1])
    return array_ops.gather(flat, positions, axis=axis, name=name)


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None):
    """mask[..., j] = j < lengths[...]: a row of True for each length."""
    lengths = _tensor(lengths)
    if maxlen is None:
        maxlen = math_ops.reduce_max(lengths)
    maxlen = math_ops.cast(_int_scalar(maxlen, "maxlen"), lengths.dtype)
    row = array_ops._range(0, maxlen, 1, dtype=lengths.dtype)
    mask = math_ops.OPERATOR_FUNCTIONS["less"](row, array_ops.expand_dims(lengths, -1))
    dtype = dtypes.as_dtype(dtype)
    return mask if dtype == dtypes.bool else math_ops.cast(mask, dtype, name=name)


# ---------------------------------------------------------------- grids and identities

def meshgrid(*args, indexing="xy", name=None):
    """Coordinate grids from N 1-D tensors: "xy" (Cartesian, the default) swaps
    the first two output dimensions, "ij" (matrix) does not."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"td.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    tensors = [array_ops.reshape(_tensor(a), [-1]) for a in args]
    n = len(tensors)
    if n == 0:
        return []
    sizes = [array_ops.size(t) for t in tensors]
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    outputs = []
    for i, t in enumerate(tensors):
        place = i
        if indexing == "xy" and n > 1 and i < 2:
            place = 1 - i
        shape = [1] * n
        shape[place] = -1
        grid = array_ops.reshape(t, shape)
        outputs.append(math_ops.OPERATOR_FUNCTIONS["multiply"](grid, array_ops.ones(array_ops.stack(sizes),
                                                                                    dtype=t.dtype)))
    return outputs


def identity_n(input, name=None):  # noqa: A002
    """The tensors of `input` (of any dtypes) passed through one IdentityN op."""
    return execute("IdentityN", [_tensor(t) for t in input], name=name)


def ensure_shape(x, shape, name=None):
    """x, checked to have `shape` (None where any size goes): when the function
    is traced if the shapes are known, and when the op runs
    (InvalidArgumentError) otherwise; the result has the merged static shape."""
    return _run1("EnsureShape", [_tensor(x)], {"shape": TensorShape(shape).dims}, name=name)


PUBLIC = {"": ["pad", "reverse", "roll", "gather_nd", "scatter_nd", "tensor_scatter_nd_update",
               "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "boolean_mask", "sequence_mask", "meshgrid",
               "identity_n", "ensure_shape"]}
