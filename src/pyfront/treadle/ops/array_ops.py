"""Array wrappers with TensorFlow's signatures: shapes, joining and splitting,
gathering, indexing and slicing, and tensors made from a shape and a value.

Each wrapper converts its Python arguments the way TensorFlow does and runs a
registered op through `execute`, so the same code builds graph nodes when a
function is being traced."""

import numbers

import numpy as np

from treadle.framework import context, dtypes
from treadle.framework import tensor as tensor_module
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
# gather_interceptors: td.loom.autobatch's (it appends its row gatherer)
from treadle.ops._gather import gather, gather_interceptors, set_gather_op  # noqa: F401
from treadle.ops.math_ops import cast

newaxis = None

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _run1(op_name, inputs, attrs=None, name=None):
    return execute(op_name, inputs, attrs, name=name)[0]


def _is_int(value):
    return type(value) is int or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def _tensor(value):
    """convert_to_tensor with a fast path for what is already an eager tensor."""
    return value if type(value) is EagerTensor else convert_to_tensor(value)


def _index_dtype(values):
    return dtypes.int32 if all(_INT32_MIN <= v <= _INT32_MAX for v in values) else dtypes.int64


def _new_index_tensor(key):
    """An int32 (int64 when needed) tensor for a Python int or tuple of ints."""
    if isinstance(key, tuple):
        return convert_to_tensor(np.array(key, dtype=_index_dtype(key).as_numpy_dtype))
    return convert_to_tensor(key, dtype=_index_dtype((key,)))


# Small integer constants (axes, shapes, slice specs) are made once and reused
# in eager mode: tensors are immutable, and building one from Python costs more
# than the op. While tracing, each becomes a Const node of the graph instead,
# so that shape inference sees its value.
_INDEX_CONSTANTS = {}
_INDEX_CONSTANTS_LIMIT = 4096


def _index_constant(key):
    """The index tensor for a Python int or tuple of ints (see _new_index_tensor)."""
    if context.current_graph() is not None:
        return _new_index_tensor(key)
    t = _INDEX_CONSTANTS.get(key)
    if t is None:
        t = _new_index_tensor(key)
        if not isinstance(key, tuple) or len(key) <= 16:
            if len(_INDEX_CONSTANTS) >= _INDEX_CONSTANTS_LIMIT:
                _INDEX_CONSTANTS.clear()
            _INDEX_CONSTANTS[key] = t
    return t


def _int_scalar(value, what):
    """A scalar integer tensor for an axis-like argument (a Python int or an integer tensor)."""
    if isinstance(value, Tensor):
        if not value.dtype.is_integer:
            raise TypeError(f"`{what}` must be an int32 or int64 tensor, got {value.dtype.name}")
        return value
    if _is_int(value):
        return _index_constant(int(value))
    t = convert_to_tensor(value, dtype_hint=dtypes.int32)
    if not t.dtype.is_integer:
        raise TypeError(f"`{what}` must be an integer, got {value!r}")
    return t


def _int_vector(value, what):
    """An integer vector tensor for a shape-like argument: a list or tuple of
    ints (or scalar tensors), a fully known TensorShape, a NumPy array or an
    integer tensor."""
    if type(value) in (list, tuple) and all(type(v) is int for v in value):
        return _index_constant(tuple(value))
    if isinstance(value, Tensor):
        if not value.dtype.is_integer:
            raise TypeError(f"`{what}` must be an int32 or int64 tensor, got {value.dtype.name}")
        return value
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a Tensor.")
        value = value.as_list()
    if isinstance(value, (list, tuple)):
        if all(_is_int(v) for v in value):
            return _index_constant(tuple(int(v) for v in value))
        if any(v is None for v in value):
            raise ValueError(f"`{what}` must be fully known, got {value!r}")
    t = convert_to_tensor(value, dtype_hint=dtypes.int32)
    if not t.dtype.is_integer:
        raise TypeError(f"`{what}` must be a list of integers or an integer tensor, got {value!r}")
    return t


def _convert_list(values):
    """Converts a list of tensor-like values to tensors of one dtype: Python
    values take the dtype of the first value that already is a tensor."""
    hint = None
    for v in values:
        if isinstance(v, Tensor):
            hint = v.dtype
            break
    if hint is not None:
        values = [_cast_packed_tensors(v, hint) if isinstance(v, (list, tuple)) else v for v in values]
    return [convert_to_tensor(v, dtype_hint=hint) for v in values]


def _cast_packed_tensors(value, dtype):
    """A Python list packed into a tensor of `dtype`: as TensorFlow's
    autopacking does, tensors of another dtype in it are cast to `dtype`."""
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else _run1("Cast", [value], {"DstT": dtype})
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_packed_tensors(v, dtype) for v in value)
    return value


# ---------------------------------------------------------------- shapes

def reshape(tensor, shape, name=None):
    """`tensor`'s elements (not copied) under `shape`; one entry of `shape` may be -1."""
    tensor = _tensor(tensor)
    return _run1("Reshape", [tensor, _int_vector(shape, "shape")], name=name)


def expand_dims(input, axis, name=None):  # noqa: A002 (TensorFlow's argument name)
    """Inserts a dimension of size 1 at `axis` (negative counts from the end)."""
    if axis is None:
        raise ValueError("expand_dims: `axis` must be set")
    return _run1("ExpandDims", [_tensor(input), _int_scalar(axis, "axis")], name=name)


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Removes the dimensions of size 1 listed in `axis` (an int or a list), or all of them."""
    if axis is None:
        axis = []
    elif _is_int(axis):
        axis = [int(axis)]
    else:
        axis = [int(a) for a in axis]
    return _run1("Squeeze", [_tensor(input)], {"axis": axis}, name)


def identity(input, name=None):  # noqa: A002
    """`input` itself, as a tensor."""
    return _run1("Identity", [_tensor(input)], name=name)


def shape(input, out_type=None, name=None):  # noqa: A002
    """The shape of `input` as an int32 (or `out_type`) vector."""
    out_type = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    return _run1("Shape", [_tensor(input)], {"out_type": out_type}, name)


def size(input, out_type=None, name=None):  # noqa: A002
    """The number of elements of `input` as an int32 (or `out_type`) scalar."""
    out_type = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    return _run1("Size", [_tensor(input)], {"out_type": out_type}, name)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as an int32 scalar."""
    return _run1("Rank", [_tensor(input)], name=name)


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes the dimensions of `a` (output dimension i is input dimension
    perm[i]); without `perm`, reverses them."""
    a = _tensor(a)
    if perm is None:
        r = a.shape.rank
        if r is not None:
            perm = list(range(r - 1, -1, -1))
        else:  # rank known only when the graph runs: perm = (rank - 1) - range(rank)
            r = rank(a)
            one = convert_to_tensor(1, dtype=dtypes.int32)
            zero = convert_to_tensor(0, dtype=dtypes.int32)
            seq = _run1("Range", [zero, r, one])
            perm = _run1("Sub", [_run1("Sub", [r, one]), seq])
    return _run1("Transpose", [a, _int_vector(perm, "perm")], name=name)


# ---------------------------------------------------------------- joining and splitting

def concat(values, axis, name="concat"):
    """Concatenates the tensors of `values` along dimension `axis`."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    if not values:
        raise ValueError("concat: `values` must hold at least one tensor")
    return _run1("ConcatV2", _convert_list(values) + [_int_scalar(axis, "axis")], name=name)


def stack(values, axis=0, name="stack"):
    """Stacks same-shaped tensors along a new dimension `axis`."""
    if isinstance(values, Tensor):
        if axis == 0:
            return values
        values = unstack(values)
    values = list(values)
    if not values:
        raise ValueError("stack: `values` must hold at least one tensor")
    values = _convert_list(values)
    r = values[0].shape.rank
    if r is not None and not -(r + 1) <= axis < r + 1:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-(r + 1)}, {r + 1})")
    return _run1("Pack", values, {"axis": int(axis)}, name)


def unstack(value, num=None, axis=0, name="unstack"):
    """The slices of `value` along `axis`, as a list of `num` tensors (`num` is
    read from the static shape when not given)."""
    value = _tensor(value)
    value_shape = value.shape
    if value_shape.rank is not None:
        r = value_shape.rank
        if not -r <= axis < r:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-r}, {r})")
        if num is None:
            num = value_shape[axis]
    if num is None:
        raise ValueError(f"Cannot infer argument `num` from shape {value_shape}")
    return execute("Unpack", [value], {"num": int(num), "axis": int(axis)}, name=name)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits `value` along `axis` into `num_or_size_splits` equal pieces (an
    int), or into pieces of the listed sizes (one may be -1)."""
    value = _tensor(value)
    if _is_int(num_or_size_splits):
        return execute("Split", [_int_scalar(axis, "axis"), value], {"num_split": int(num_or_size_splits)},
                       name=name)
    size_splits = _int_vector(num_or_size_splits, "num_or_size_splits")
    if size_splits.shape.rank == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument to split. "
                         f"Argument provided: {num_or_size_splits!r}")
    if num is None:
        num = size_splits.shape[0] if size_splits.shape.rank is not None else None
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {size_splits.shape}")
    return execute("SplitV", [value, size_splits, _int_scalar(axis, "axis")], {"num_split": int(num)}, name=name)


# ---------------------------------------------------------------- gathering and choosing

# td.gather is in C (_gather.pyx): while td.loom.autobatch records, it offers
# the call to the recorder's row gatherer (gather_interceptors) first, before
# either argument becomes a tensor; the op is run here.
def _gather(params, indices, axis, batch_dims, name):
    """td.gather's op, for what no interceptor answered."""
    params = _tensor(params)
    indices = convert_to_tensor(indices, dtype_hint=dtypes.int32)
    if axis is None:
        axis = batch_dims
    return _run1("GatherV2", [params, indices, _int_scalar(axis, "axis")], {"batch_dims": int(batch_dims)}, name)


set_gather_op(_gather)


def where(condition, x=None, y=None, name=None):
    """With `x` and `y`: elementwise `x` where `condition` is true, else `y`
    (all three broadcast). Alone: the int64 coordinates of the true (non-zero)
    elements of `condition`, one row each."""
    if x is None and y is None:
        return _run1("Where", [_tensor(condition)], name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    condition = convert_to_tensor(condition, dtype_hint=dtypes.bool)
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x.dtype)
    else:
        x = convert_to_tensor(x, dtype_hint=y.dtype)
    return _run1("SelectV2", [condition, x, y], name=name)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length `depth` along a new dimension `axis` (default
    last). Indices outside [0, depth) give vectors of all `off_value`."""
    indices = convert_to_tensor(indices, dtype_hint=dtypes.int32)
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if on_value is not None:
        on_value = convert_to_tensor(on_value, dtype_hint=dtype)
    if off_value is not None:
        off_value = convert_to_tensor(off_value, dtype_hint=dtype)
    given = [v for v in (on_value, off_value) if v is not None]
    if given:
        if dtype is not None:
            for label, v in (("on_value", on_value), ("off_value", off_value)):
                if v is not None and v.dtype != dtype:
                    raise TypeError(f"dtype {v.dtype} of {label} does not match dtype parameter {dtype}")
        else:
            dtype = given[0].dtype
    elif dtype is None:
        dtype = dtypes.float32
    if on_value is None:
        on_value = convert_to_tensor(True if dtype == dtypes.bool else 1, dtype=dtype)
    if off_value is None:
        off_value = convert_to_tensor(False if dtype == dtypes.bool else 0, dtype=dtype)
    if on_value.dtype != off_value.dtype:
        raise TypeError(f"dtype {on_value.dtype} of on_value does not match dtype {off_value.dtype} of off_value")
    axis = -1 if axis is None else int(axis)
    return _run1("OneHot", [indices, _int_scalar(depth, "depth"), on_value, off_value], {"axis": axis}, name)


def tile(input, multiples, name=None):  # noqa: A002
    """`input` repeated multiples[i] times along each dimension i."""
    return _run1("Tile", [_tensor(input), _int_vector(multiples, "multiples")], name=name)


# ---------------------------------------------------------------- tensors from shapes and values

def fill(dims, value, name=None, layout=None):
    """A tensor of shape `dims` whose every element is `value`."""
    return _run1("Fill", [_int_vector(dims, "dims"), _tensor(value)], name=name)


def _shape_argument(shape_value):
    """`shape` of zeros/ones: like TensorFlow, a scalar means a vector of that length."""
    if _is_int(shape_value):
        shape_value = [shape_value]
    t = _int_vector(shape_value, "shape")
    if t.shape.rank == 0:
        t = reshape(t, [-1])
    return t


def _scalar_of(dtype, one):
    if dtype == dtypes.string:
        if one:
            raise TypeError("ones: there is no 'one' of dtype string")
        return convert_to_tensor("", dtype=dtype)
    if dtype == dtypes.bool:
        return convert_to_tensor(bool(one), dtype=dtype)
    return convert_to_tensor(int(one), dtype=dtype)


def zeros(shape, dtype=dtypes.float32, name=None, layout=None):
    """A tensor of `shape` filled with zeros ("" for strings, False for bool)."""
    dtype = dtypes.as_dtype(dtype)
    return _run1("Fill", [_shape_argument(shape), _scalar_of(dtype, 0)], name=name)


def ones(shape, dtype=dtypes.float32, name=None, layout=None):
    """A tensor of `shape` filled with ones (True for bool)."""
    dtype = dtypes.as_dtype(dtype)
    return _run1("Fill", [_shape_argument(shape), _scalar_of(dtype, 1)], name=name)


def zeros_like(input, dtype=None, name=None, layout=None):  # noqa: A002
    """Zeros with the shape of `input` and its dtype (or `dtype`)."""
    input = _tensor(input)
    if dtype is None or dtypes.as_dtype(dtype) == input.dtype:
        return _run1("ZerosLike", [input], name=name)
    return _run1("Fill", [shape(input), _scalar_of(dtypes.as_dtype(dtype), 0)], name=name)


def ones_like(input, dtype=None, name=None, layout=None):  # noqa: A002
    """Ones with the shape of `input` and its dtype (or `dtype`)."""
    input = _tensor(input)
    if dtype is None or dtypes.as_dtype(dtype) == input.dtype:
        return _run1("OnesLike", [input], name=name)
    return _run1("Fill", [shape(input), _scalar_of(dtypes.as_dtype(dtype), 1)], name=name)


_RANGE_DTYPE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def _range_argument(value, dtype):
    if isinstance(value, Tensor):
        return value
    if dtype is not None:
        return convert_to_tensor(value, dtype=dtype)
    if _is_int(value):
        return _index_constant(int(value))
    if isinstance(value, float):
        return convert_to_tensor(value, dtype=dtypes.float32)
    return _tensor(value)


def _range(start, limit=None, delta=1, dtype=None, name="range"):
    """start, start + delta, ... up to but not including limit (`range(n)`
    counts from 0). Without `dtype`, ints give int32 and any float float32, or
    the widest dtype of the tensors given."""
    if limit is None:
        start, limit = 0, start
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    args = [_range_argument(v, dtype) for v in (start, limit, delta)]
    if dtype is None:
        for v in args:
            if v.dtype not in _RANGE_DTYPE_ORDER:
                raise TypeError(f"range: arguments must be int32, int64, float32 or float64, got {v.dtype.name}")
        dtype = max((v.dtype for v in args), key=_RANGE_DTYPE_ORDER.index)
    args = [cast(v, dtype) for v in args]
    return _run1("Range", args, name=name)


# ---------------------------------------------------------------- indexing and slicing

def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """TensorFlow's StridedSlice: begin/end/strides vectors and bit masks, one bit per slice entry."""
    begin = _int_vector(begin, "begin")
    end = _int_vector(end, "end")
    strides = ones_like(begin) if strides is None else _int_vector(strides, "strides")
    attrs = {"begin_mask": int(begin_mask), "end_mask": int(end_mask), "ellipsis_mask": int(ellipsis_mask),
             "new_axis_mask": int(new_axis_mask), "shrink_axis_mask": int(shrink_axis_mask)}
    return _run1("StridedSlice", [_tensor(input_), begin, end, strides], attrs, name)


_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), td.newaxis (`None`) and scalar "
                     "td.int32/td.int64 tensors are valid indices")


def _index_value(idx):
    """A Python int for ints and eager scalar integer tensors; symbolic scalar
    integer tensors stay tensors. TypeError for anything else."""
    if type(idx) is int:
        return idx
    if _is_int(idx):
        return int(idx)
    if isinstance(idx, Tensor) and idx.dtype in (dtypes.int32, dtypes.int64) and idx.shape.rank == 0:
        return int(idx) if type(idx) is EagerTensor else idx
    raise TypeError(f"{_SLICE_TYPE_ERROR}, got {idx!r}")


def _parse_slice_key(key):
    """TensorFlow's encoding of an index expression: begin, end and strides
    lists (Python ints, or tensors for symbolic indices) and the five masks."""
    if not isinstance(key, (list, tuple)):
        key = (key,)
    begin, end, strides = [], [], []
    masks = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0}
    for index, s in enumerate(key):
        bit = 1 << index
        if type(s) is slice:
            start, stop, step = (None if v is None else _index_value(v) for v in (s.start, s.stop, s.step))
            if start is None:
                masks["begin_mask"] |= bit
            if stop is None:
                masks["end_mask"] |= bit
            begin.append(0 if start is None else start)
            end.append(0 if stop is None else stop)
            strides.append(1 if step is None else step)
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            i = _index_value(s)
            begin.append(i)
            # A shrunk dimension ignores its end, but keep TensorFlow's i + 1.
            end.append(i + 1 if type(i) is int else _run1("AddV2", [i, convert_to_tensor(1, dtype=i.dtype)]))
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    return begin, end, strides, masks


def _pack_symbolic_indices(lists):
    """begin/end/strides vectors from Python ints and symbolic scalar tensors (int64 if any needs it)."""
    wide = any((isinstance(v, Tensor) and v.dtype == dtypes.int64) or
               (type(v) is int and not _INT32_MIN <= v <= _INT32_MAX) for values in lists for v in values)
    dtype = dtypes.int64 if wide else dtypes.int32
    return [stack([cast(v, dtype) if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype) for v in values])
            for values in lists]


def tensor_getitem(tensor, key):
    """`tensor[key]` with NumPy's basic indexing: ints (negative from the end),
    slices with steps, Ellipsis, None (td.newaxis) and scalar integer tensors."""
    begin, end, strides, masks = _parse_slice_key(key)
    tensor = _tensor(tensor)
    lists = (begin, end, strides)
    if all(type(v) is int for values in lists for v in values):
        packed = [_index_constant(tuple(values)) for values in lists]
        if not packed[0].dtype == packed[1].dtype == packed[2].dtype:  # some value needs int64
            packed = [convert_to_tensor(np.array(values, dtype=np.int64)) for values in lists]
    else:
        packed = _pack_symbolic_indices(lists)
    return _run1("StridedSlice", [tensor] + packed, masks)


# Lists holding tensors convert by packing; td.constant(tensor, shape=...)
# reshapes; tensors iterate by unstacking and index by strided slicing.
tensor_module.register_array_functions(pack=stack, reshape=reshape, unstack=unstack, getitem=tensor_getitem)

PUBLIC = {"": ["reshape", "expand_dims", "squeeze", "identity", "shape", "size", "rank", "transpose",
               "concat", "stack", "unstack", "split", "gather", "where", "one_hot", "tile", "fill", "zeros",
               "ones", "zeros_like", "ones_like", "range", "strided_slice", "newaxis"]}
