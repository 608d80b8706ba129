"""td.sparse and td.SparseTensor: tensors that store only some entries."""

from treadle.sparse.sparse_ops import (add, expand_dims, from_dense, reduce_sum, reorder, retain, sparse_dense_matmul, to_dense,
                                       transpose)
from treadle.sparse.sparse_tensor import SparseTensor, SparseTensorSpec

__all__ = ["SparseTensor", "SparseTensorSpec", "add", "expand_dims", "from_dense", "reduce_sum", "reorder", "retain",
           "sparse_dense_matmul", "to_dense", "transpose"]


def __dir__():
    return sorted(__all__)
