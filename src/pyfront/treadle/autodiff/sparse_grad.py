"""Gradient rules of the sparse ops (C++ kernels in sparse_ops.cc): with
respect to the stored values and the dense operands; indices and shapes are
integers and get none."""

from treadle.autodiff import helpers
from treadle.autodiff.helpers import ints, run, run_all, scalar
from treadle.autodiff.batching_registry import RunsPerExample
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr
from treadle.framework import dtypes

# A SparseTensor of each example holds its own number of entries, so the
# index and value tensors of several examples cannot be stacked.
RunsPerExample("a sparse tensor's entries differ in number from one example to the next",
               "SparseToDense", "SparseAdd", "SparseAddGrad", "SparseReduceSum", "SparseReorder",
               "SparseTensorDenseAdd", "SparseTensorDenseMatMul")

# SparseAddGrad is linear in the gradient it routes and only ever runs on
# gradients, which do not depend on the values SparseAdd was given.
NotDifferentiable("SparseAddGrad")


def _as_matrix(indices):
    """SparseToDense's indices ([nnz, rank], [nnz] or a scalar) as [nnz, rank]."""
    if indices.shape.rank == 2:
        return indices
    return helpers.reshape(indices, ints([-1, 1]))


@RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    indices, _, values, _ = op.inputs
    picked = run("GatherNd", [grad, _as_matrix(indices)])
    total = helpers.reduce_sum(grad, helpers.all_axes(grad))
    d_values = picked if values.shape.rank != 0 else helpers.reduce_sum(picked, ints([0]))
    # The default fills every position no entry was written to.
    d_default = helpers.sub(total, helpers.reduce_sum(picked, ints([0])))
    return None, None, d_values, d_default


@RegisterGradient("SparseTensorDenseAdd")
def _sparse_dense_add_grad(op, grad):
    return None, run("GatherNd", [grad, op.inputs[0]]), None, grad


@RegisterGradient("SparseTensorDenseMatMul")
def _sparse_matmul_grad(op, grad):
    # out = op(A) @ op(B). An entry v at (r, c) of A adds v * op(B)[c] to row r
    # of out (the roles of r and c swap with adjoint_a).
    indices, values, shape, b = op.inputs
    adj_a, adj_b = bool(get_attr(op, "adjoint_a")), bool(get_attr(op, "adjoint_b"))
    axis0, axis1 = scalar(0, dtypes.int32), scalar(1, dtypes.int32)
    rows = run("GatherV2", [indices, scalar(1 if adj_a else 0, dtypes.int32), axis1])
    cols = run("GatherV2", [indices, scalar(0 if adj_a else 1, dtypes.int32), axis1])
    op_b = run("Transpose", [b, ints([1, 0])]) if adj_b else b
    d_values = helpers.reduce_sum(helpers.mul(run("GatherV2", [grad, rows, axis0]),
                                              run("GatherV2", [op_b, cols, axis0])), ints([1]))
    # d op(B) = op(A)^T @ grad.
    d_op_b = run("SparseTensorDenseMatMul", [indices, values, shape, grad], {"adjoint_a": not adj_a})
    d_b = run("Transpose", [d_op_b, ints([1, 0])]) if adj_b else d_op_b
    return None, d_values, None, d_b


@RegisterGradient("SparseAdd")
def _sparse_add_grad(op, d_indices, d_values, d_shape):
    if d_values is None:
        return (None,) * 7
    d_a, d_b = run_all("SparseAddGrad", [d_values, op.inputs[0], op.inputs[3], op.outputs[0]])
    return None, d_a, None, None, d_b, None, None


@RegisterGradient("SparseReduceSum")
def _sparse_reduce_sum_grad(op, grad):
    # Each value went to the output position of its index with the reduced
    # coordinates dropped: read the gradient there (reduced dims kept as 1).
    indices, _, shape, axes = op.inputs
    i64 = dtypes.int64
    rank = run("Size", [shape], {"out_type": dtypes.int32})
    positions = run("Range", [scalar(0, dtypes.int32), rank, scalar(1, dtypes.int32)])
    axes = run("FloorMod", [helpers.add(axes, rank), rank])
    hit = run("Equal", [run("ExpandDims", [positions, scalar(1, dtypes.int32)]),
                        run("ExpandDims", [axes, scalar(0, dtypes.int32)])])
    reduced = run("Any", [hit, scalar(1, dtypes.int32)], {"keep_dims": False})
    kept = helpers.cast(run("LogicalNot", [reduced]), i64)
    kept_shape = helpers.add(helpers.mul(shape, kept), helpers.sub(scalar(1, i64), kept))
    at = helpers.mul(indices, kept)
    return None, run("GatherNd", [helpers.reshape(grad, kept_shape), at]), None, None


@RegisterGradient("SparseReorder")
def _sparse_reorder_grad(op, d_indices, d_values):
    if d_values is None:
        return None, None, None
    indices, values, shape = op.inputs
    count = run("Size", [values], {"out_type": dtypes.int64})
    order = run("Range", [scalar(0, dtypes.int64), count, scalar(1, dtypes.int64)])
    _, moved = run_all("SparseReorder", [indices, order, shape])
    # Output entry k came from input entry moved[k]: send its gradient back.
    back = run("InvertPermutation", [moved])
    return None, run("GatherV2", [d_values, back, scalar(0, dtypes.int32)]), None
