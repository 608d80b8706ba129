"""td.sparse: TensorFlow's sparse operations on td.SparseTensor. The work is
done by the C++ sparse kernels (SparseToDense, SparseAdd, ...), which
validate indices against the dense shape; their gradient rules are in
autodiff/sparse_grad.py."""

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.sparse.sparse_tensor import SparseTensor


def _sparse(value, what):
    if not isinstance(value, SparseTensor):
        raise TypeError(f"td.sparse.{what}: expected a td.SparseTensor, got {type(value).__name__}")
    return value


def _zero(dtype):
    return convert_to_tensor(b"" if dtype == dtypes.string else 0, dtype=dtype)


def _ints(values, dtype=dtypes.int32):
    return convert_to_tensor(values, dtype=dtype)


def from_dense(tensor, name=None):
    """The entries of `tensor` that are not zero (not "" for strings)."""
    t = convert_to_tensor(tensor)
    indices = execute("Where", [execute("NotEqual", [t, _zero(t.dtype)])[0]])[0]
    values = execute("GatherNd", [t, indices])[0]
    return SparseTensor(indices, values, execute("Shape", [t], {"out_type": dtypes.int64})[0])


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor: the stored values at their indices, `default_value`
    (zero) elsewhere. With validate_indices, entries must be in row-major
    order with no index repeated."""
    sp = _sparse(sp_input, "to_dense")
    default = _zero(sp.dtype) if default_value is None else convert_to_tensor(default_value, dtype=sp.dtype)
    dense = execute("SparseToDense", [sp.indices, sp.dense_shape, sp.values, default],
                    {"validate_indices": bool(validate_indices)})[0]
    if sp.shape.rank is not None and hasattr(dense, "set_shape"):
        dense.set_shape(sp.shape)
    return dense


def add(a, b, threshold=0, name=None):
    """a + b. Two sparse tensors (of one dense shape, each in row-major order)
    give a sparse tensor, dropping sums whose magnitude is below `threshold`;
    a sparse and a dense tensor give a dense tensor."""
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        thresh = convert_to_tensor(threshold, dtype=a.dtype)
        indices, values, shape = execute("SparseAdd", [a.indices, a.values, a.dense_shape, b.indices, b.values,
                                                       b.dense_shape, thresh])
        out = SparseTensor(indices, values, shape)
        out.set_shape(a.shape.merge_with(b.shape) if a.shape.is_compatible_with(b.shape) else a.shape)
        return out
    if isinstance(b, SparseTensor):
        a, b = b, a
    if not isinstance(a, SparseTensor):
        raise TypeError("td.sparse.add: at least one operand must be a td.SparseTensor")
    dense = convert_to_tensor(b, dtype=a.dtype)
    return execute("SparseTensorDenseAdd", [a.indices, a.values, a.dense_shape, dense])[0]


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The matrix product of a sparse and a dense matrix (in either order),
    each transposed first when its adjoint flag is set."""
    if isinstance(b, SparseTensor) and not isinstance(sp_a, SparseTensor):
        # dense @ sparse = (sparse^T @ dense^T)^T
        product = sparse_dense_matmul(b, sp_a, adjoint_a=not adjoint_b, adjoint_b=not adjoint_a)
        return execute("Transpose", [product, _ints([1, 0])])[0]
    sp = _sparse(sp_a, "sparse_dense_matmul")
    dense = convert_to_tensor(b, dtype=sp.dtype)
    return execute("SparseTensorDenseMatMul", [sp.indices, sp.values, sp.dense_shape, dense],
                   {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)})[0]


def _axes(sp, axis):
    if axis is None:
        rank = sp.shape.rank
        if rank is None:
            return execute("Range", [_ints(0), execute("Size", [sp.dense_shape])[0], _ints(1)])[0]
        return _ints(list(range(rank)))
    return _ints(axis)


def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
    """The sum of the stored values along `axis` (all axes when None), as a
    dense tensor (or, with output_is_sparse, its non-zero entries)."""
    sp = _sparse(sp_input, "reduce_sum")
    out = execute("SparseReduceSum", [sp.indices, sp.values, sp.dense_shape, _axes(sp, axis)],
                  {"keep_dims": bool(keepdims)})[0]
    return from_dense(out) if output_is_sparse else out


def reorder(sp_input, name=None):
    """The same sparse tensor with its entries in row-major order."""
    sp = _sparse(sp_input, "reorder")
    indices, values = execute("SparseReorder", [sp.indices, sp.values, sp.dense_shape])
    out = SparseTensor(indices, values, sp.dense_shape)
    out.set_shape(sp.shape)
    return out


def retain(sp_input, to_retain):
    """The entries whose flag in the bool vector `to_retain` is true."""
    sp = _sparse(sp_input, "retain")
    keep = convert_to_tensor(to_retain, dtype=dtypes.bool)
    if keep.shape.rank not in (None, 1):
        raise ValueError(f"td.sparse.retain: to_retain must be a vector, got shape {keep.shape}")
    n = sp.values.shape[0]
    if keep.shape.rank == 1 and None not in (n, keep.shape[0]) and n != keep.shape[0]:
        raise ValueError(f"td.sparse.retain: to_retain has {keep.shape[0]} flags for {n} entries")
    rows = execute("Reshape", [execute("Where", [keep])[0], _ints([-1])])[0]
    axis0 = _ints(0)
    out = SparseTensor(execute("GatherV2", [sp.indices, rows, axis0])[0],
                       execute("GatherV2", [sp.values, rows, axis0])[0], sp.dense_shape)
    out.set_shape(sp.shape)
    return out


def transpose(sp_input, perm=None, name=None):
    """The sparse tensor with its dimensions permuted (reversed by default),
    its entries back in row-major order."""
    sp = _sparse(sp_input, "transpose")
    if perm is None:
        rank = sp.shape.rank
        if rank is None:
            raise ValueError("td.sparse.transpose: perm is needed when the rank is not known")
        perm = list(reversed(range(rank)))
    p = _ints(perm)
    axis1, axis0 = _ints(1), _ints(0)
    moved = SparseTensor(execute("GatherV2", [sp.indices, p, axis1])[0], sp.values,
                         execute("GatherV2", [sp.dense_shape, p, axis0])[0])
    return reorder(moved)


def expand_dims(sp_input, axis=None, name=None):
    """The sparse tensor with a dimension of size 1 inserted at `axis` (0 by
    default; negative counts from the end, -1 appends)."""
    sp = _sparse(sp_input, "expand_dims")
    axis = 0 if axis is None else axis
    rank = sp.shape.rank
    if isinstance(axis, int) and rank is not None:
        if not -rank - 1 <= axis <= rank:
            raise ValueError(f"td.sparse.expand_dims: axis {axis} is out of range for rank {rank}")
        at = axis + rank + 1 if axis < 0 else axis
    else:
        r = execute("Size", [sp.dense_shape], {"out_type": dtypes.int32})[0]
        a = convert_to_tensor(axis, dtype=dtypes.int32)
        at = execute("SelectV2", [execute("Less", [a, _ints(0)])[0],
                                  execute("AddV2", [a, execute("AddV2", [r, _ints(1)])[0]])[0], a])[0]
    count = execute("Shape", [sp.indices], {"out_type": dtypes.int32})[0][:1]
    zeros = execute("Fill", [execute("ConcatV2", [count, _ints([1]), _ints(0)])[0],
                             convert_to_tensor(0, dtype=dtypes.int64)])[0]
    indices = execute("ConcatV2", [sp.indices[:, :at], zeros, sp.indices[:, at:], _ints(1)])[0]
    shape = execute("ConcatV2", [sp.dense_shape[:at], convert_to_tensor([1], dtype=dtypes.int64),
                                 sp.dense_shape[at:], _ints(0)])[0]
    return SparseTensor(indices, sp.values, shape)


__all__ = ["expand_dims", "from_dense", "to_dense", "add", "sparse_dense_matmul", "reduce_sum", "reorder", "retain", "transpose"]
