"""Array wrappers with TensorFlow's signatures: shapes, joining and splitting,
gathering, indexing and slicing, and tensors made from a shape and a value.

Each wrapper converts its Python arguments the way TensorFlow does and runs a
registered op through `execute`, so the same code builds graph nodes when a
function is being traced."""

import numbers

import numpy as np

from treadle.framework import dtypes
from treadle.framework.ops import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape

newaxis = None

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _run1(op_name, inputs, attrs=None, name=None):
    return execute(op_name, inputs, attrs, name=name)[0]


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _index_dtype(values):
    return dtypes.int32 if all(_INT32_MIN <= v <= _INT32_MAX for v in values) else dtypes.int64


def _int_scalar(value, what):
    """A scalar integer tensor for an axis-like argument (a Python int or an integer tensor)."""
    if isinstance(value, Tensor):
        if not value.dtype.is_integer:
            raise TypeError(f"`{what}` must be an int32 or int64 tensor, got {value.dtype.name}")
        return value
    if _is_int(value):
        value = int(value)
        return convert_to_tensor(value, dtype=_index_dtype([value]))
    t = convert_to_tensor(value, dtype_hint=dtypes.int32)
    if not t.dtype.is_integer:
        raise TypeError(f"`{what}` must be an integer, got {value!r}")
    return t


def _int_vector(value, what):
    """An integer vector tensor for a shape-like argument: a list or tuple of
    ints (or scalar tensors), a fully known TensorShape, a NumPy array or an
    integer tensor."""
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
            ints = [int(v) for v in value]
            return convert_to_tensor(np.array(ints, dtype=_index_dtype(ints).as_numpy_dtype))
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
    return [convert_to_tensor(v, dtype_hint=hint) for v in values]


# ---------------------------------------------------------------- shapes

def reshape(tensor, shape, name=None):
    """`tensor`'s elements (not copied) under `shape`; one entry of `shape` may be -1."""
    tensor = convert_to_tensor(tensor)
    return _run1("Reshape", [tensor, _int_vector(shape, "shape")], name=name)


def expand_dims(input, axis, name=None):  # noqa: A002 (TensorFlow's argument name)
    """Inserts a dimension of size 1 at `axis` (negative counts from the end)."""
    if axis is None:
        raise ValueError("expand_dims: `axis` must be set")
    return _run1("ExpandDims", [convert_to_tensor(input), _int_scalar(axis, "axis")], name=name)


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Removes the dimensions of size 1 listed in `axis` (an int or a list), or all of them."""
    if axis is None:
        axis = []
    elif _is_int(axis):
        axis = [int(axis)]
    else:
        axis = [int(a) for a in axis]
    return _run1("Squeeze", [convert_to_tensor(input)], {"axis": axis}, name)


def identity(input, name=None):  # noqa: A002
    """`input` itself, as a tensor."""
    return _run1("Identity", [convert_to_tensor(input)], name=name)


def shape(input, out_type=None, name=None):  # noqa: A002
    """The shape of `input` as an int32 (or `out_type`) vector."""
    out_type = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    return _run1("Shape", [convert_to_tensor(input)], {"out_type": out_type}, name)


def size(input, out_type=None, name=None):  # noqa: A002
    """The number of elements of `input` as an int32 (or `out_type`) scalar."""
    out_type = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    return _run1("Size", [convert_to_tensor(input)], {"out_type": out_type}, name)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as an int32 scalar."""
    return _run1("Rank", [convert_to_tensor(input)], name=name)


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes the dimensions of `a` (output dimension i is input dimension
    perm[i]); without `perm`, reverses them."""
    a = convert_to_tensor(a)
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
    value = convert_to_tensor(value)
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
    value = convert_to_tensor(value)
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

def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` (default: `batch_dims`) at `indices`.
    An index outside [0, params.shape[axis]) is an InvalidArgumentError."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices, dtype_hint=dtypes.int32)
    if axis is None:
        axis = batch_dims
    return _run1("GatherV2", [params, indices, _int_scalar(axis, "axis")], {"batch_dims": int(batch_dims)}, name)


def where(condition, x=None, y=None, name=None):
    """With `x` and `y`: elementwise `x` where `condition` is true, else `y`
    (all three broadcast). Alone: the int64 coordinates of the true (non-zero)
    elements of `condition`, one row each."""
    if x is None and y is None:
        return _run1("Where", [convert_to_tensor(condition)], name=name)
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
    return _run1("Tile", [convert_to_tensor(input), _int_vector(multiples, "multiples")], name=name)


# ---------------------------------------------------------------- tensors from shapes and values

def fill(dims, value, name=None, layout=None):
    """A tensor of shape `dims` whose every element is `value`."""
    return _run1("Fill", [_int_vector(dims, "dims"), convert_to_tensor(value)], name=name)


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
    input = convert_to_tensor(input)
    if dtype is None or dtypes.as_dtype(dtype) == input.dtype:
        return _run1("ZerosLike", [input], name=name)
    return _run1("Fill", [shape(input), _scalar_of(dtypes.as_dtype(dtype), 0)], name=name)


def ones_like(input, dtype=None, name=None, layout=None):  # noqa: A002
    """Ones with the shape of `input` and its dtype (or `dtype`)."""
    input = convert_to_tensor(input)
    if dtype is None or dtypes.as_dtype(dtype) == input.dtype:
        return _run1("OnesLike", [input], name=name)
    return _run1("Fill", [shape(input), _scalar_of(dtypes.as_dtype(dtype), 1)], name=name)


_RANGE_DTYPE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def _range(start, limit=None, delta=1, dtype=None, name="range"):
    """start, start + delta, ... up to but not including limit (`range(n)`
    counts from 0). Without `dtype`, ints give int32 and any float float32, or
    the widest dtype of the tensors given."""
    if limit is None:
        start, limit = 0, start
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    args = [v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype) for v in (start, limit, delta)]
    if dtype is None:
        for v in args:
            if v.dtype not in _RANGE_DTYPE_ORDER:
                raise TypeError(f"range: arguments must be int32, int64, float32 or float64, got {v.dtype.name}")
        dtype = max((v.dtype for v in args), key=_RANGE_DTYPE_ORDER.index)
    from treadle.ops.math_ops import cast
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
    return _run1("StridedSlice", [convert_to_tensor(input_), begin, end, strides], attrs, name)


_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), td.newaxis (`None`) and scalar "
                     "td.int32/td.int64 tensors are valid indices")


def _check_index(idx):
    """Accepts Python ints and scalar integer tensors as indices."""
    if _is_int(idx):
        return
    dtype = getattr(idx, "dtype", None)
    if not isinstance(idx, Tensor) or dtype not in (dtypes.int32, dtypes.int64) or idx.shape.rank != 0:
        raise TypeError(f"{_SLICE_TYPE_ERROR}, got {idx!r}")


def _index_value(idx):
    """A Python int for ints and eager scalar tensors; symbolic tensors stay tensors."""
    if _is_int(idx):
        return int(idx)
    try:
        return int(idx.__index__())
    except (AttributeError, TypeError, ValueError):
        return idx


def _slice_index_dtype(*lists):
    """int64 when any index is an int64 tensor or a Python int beyond int32, else int32."""
    for values in lists:
        for v in values:
            if isinstance(v, Tensor):
                if v.dtype == dtypes.int64:
                    return dtypes.int64
            elif not _INT32_MIN <= v <= _INT32_MAX:
                return dtypes.int64
    return dtypes.int32


def _pack_indices(values, dtype):
    """An integer vector of `dtype` from Python ints and (symbolic) scalar tensors."""
    if all(isinstance(v, int) for v in values):
        return convert_to_tensor(np.array(values, dtype=dtype.as_numpy_dtype))
    from treadle.ops.math_ops import cast
    return stack([cast(v, dtype) if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype) for v in values])


def tensor_getitem(tensor, key):
    """`tensor[key]` with NumPy's basic indexing: ints (negative from the end),
    slices with steps, Ellipsis, None (td.newaxis) and scalar integer tensors."""
    if not isinstance(key, (list, tuple)):
        key = [key]
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_axis_mask = 0
    for index, s in enumerate(key):
        bit = 1 << index
        if isinstance(s, slice):
            for part in (s.start, s.stop, s.step):
                if part is not None:
                    _check_index(part)
            if s.start is None:
                begin.append(0)
                begin_mask |= bit
            else:
                begin.append(_index_value(s.start))
            if s.stop is None:
                end.append(0)
                end_mask |= bit
            else:
                end.append(_index_value(s.stop))
            strides.append(1 if s.step is None else _index_value(s.step))
        elif s is Ellipsis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            ellipsis_mask |= bit
        elif s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            new_axis_mask |= bit
        else:
            _check_index(s)
            i = _index_value(s)
            begin.append(i)
            # The end of an index is ignored by the shrink mask; any value will do.
            end.append(i + 1 if isinstance(i, int) else _run1("AddV2", [i, convert_to_tensor(1, dtype=i.dtype)]))
            strides.append(1)
            shrink_axis_mask |= bit
    attrs = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
    tensor = convert_to_tensor(tensor)
    if not begin:
        empty = convert_to_tensor(np.zeros(0, np.int32))
        return _run1("StridedSlice", [tensor, empty, empty, empty], attrs)
    dtype = _slice_index_dtype(begin, end, strides)
    packed = [_pack_indices(values, dtype) for values in (begin, end, strides)]
    return _run1("StridedSlice", [tensor] + packed, attrs)


PUBLIC = {"": ["reshape", "expand_dims", "squeeze", "identity", "shape", "size", "rank", "transpose",
               "concat", "stack", "unstack", "split", "gather", "where", "one_hot", "tile", "fill", "zeros",
               "ones", "zeros_like", "ones_like", "range", "strided_slice", "newaxis"]}
