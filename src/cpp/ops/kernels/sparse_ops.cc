// Sparse tensors as TensorFlow's SparseTensor: (indices [nnz, rank] int64,
// values [nnz], dense_shape [rank] int64). The kernels here validate the
// triple before reading through it (indices in range, counts consistent):
// SparseToDense, SparseTensorDenseAdd, SparseTensorDenseMatMul, SparseAdd
// (with SparseAddGrad, its gradient's kernel), SparseReduceSum and
// SparseReorder. Their gradient rules are in autodiff/sparse_grad.py.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

inline const std::vector<DType> kInt64Type = {DType::kInt64};

// A validated sparse tensor: its indices as int64 rows and its dense shape.
struct Sparse {
  int64_t nnz = 0;
  int rank = 0;
  std::vector<int64_t> index;  // nnz * rank
  Dims shape;

  const int64_t* row(int64_t i) const { return index.data() + i * rank; }
  int64_t Offset(int64_t i, const Dims& strides) const {
    int64_t at = 0;
    for (int d = 0; d < rank; ++d) at += row(i)[d] * strides[d];
    return at;
  }
};

Sparse ReadSparse(const OpDef& op, const Tensor& indices, const Tensor& values, const Tensor& dense_shape,
                  const char* which = "") {
  if (dense_shape.rank() != 1) {
    ThrowInvalidArgument(op.name, ": ", which, "dense_shape must be a vector, got shape ",
                         DimsToString(dense_shape.shape()));
  }
  Sparse s;
  s.shape = ReadInts(dense_shape);
  s.rank = static_cast<int>(s.shape.size());
  for (int64_t d : s.shape) {
    if (d < 0) ThrowInvalidArgument(op.name, ": ", which, "dense_shape has a negative dimension: ", DimsToString(s.shape));
  }
  if (indices.rank() != 2 || indices.dim(1) != s.rank) {
    ThrowInvalidArgument(op.name, ": ", which, "indices must be a matrix [nnz, ", s.rank, "], got shape ",
                         DimsToString(indices.shape()));
  }
  s.nnz = indices.dim(0);
  if (values.rank() != 1 || values.dim(0) != s.nnz) {
    ThrowInvalidArgument(op.name, ": ", which, "values must be a vector of ", s.nnz,
                         " entries (one per index), got shape ", DimsToString(values.shape()));
  }
  s.index = ReadInts(indices);
  for (int64_t i = 0; i < s.nnz; ++i) {
    for (int d = 0; d < s.rank; ++d) {
      const int64_t x = s.row(i)[d];
      if (x < 0 || x >= s.shape[d]) {
        ThrowInvalidArgument(op.name, ": ", which, "indices[", i, "] = ", x, " in dimension ", d,
                             " is out of bounds for the dense shape ", DimsToString(s.shape));
      }
    }
  }
  return s;
}

// Row-major comparison of entries i of a and j of b: <0, 0, >0.
int CompareRows(const Sparse& a, int64_t i, const Sparse& b, int64_t j) {
  for (int d = 0; d < a.rank; ++d) {
    if (a.row(i)[d] != b.row(j)[d]) return a.row(i)[d] < b.row(j)[d] ? -1 : 1;
  }
  return 0;
}

void CheckOrdered(const OpDef& op, const Sparse& s, const char* which) {
  for (int64_t i = 1; i < s.nnz; ++i) {
    if (CompareRows(s, i - 1, s, i) >= 0) {
      ThrowInvalidArgument(op.name, ": ", which, "indices[", i, "] is out of order or repeated: a sparse tensor's "
                           "entries must be in row-major order (td.sparse.reorder puts them in order)");
    }
  }
}

// The dense shape an op's dense_shape input gives, where it is a known value.
PartialShape ShapeFromValue(const InferContext& c, int i) {
  if (auto v = c.IntValues(i)) return PartialShape(*v);
  const PartialShape& s = c.shapes[i];
  if (s.known_rank && s.rank() == 1 && s.dims[0] != kUnknownDim) return PartialShape::UnknownOfRank(s.dims[0]);
  return PartialShape::Unknown();
}

// ---- SparseToDense -----------------------------------------------------------------

void SparseToDenseKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(2);
  const Tensor& default_value = ctx.input(3);
  if (default_value.num_elements() != 1 || default_value.rank() != 0) {
    ThrowInvalidArgument("SparseToDense: default_value must be a scalar, got shape ",
                         DimsToString(default_value.shape()));
  }
  // indices may be [nnz, rank], [nnz] (rank 1) or a scalar (one entry).
  const Tensor as_matrix = indices.rank() == 2 ? indices
                           : indices.Reshaped(Dims{indices.rank() == 0 ? 1 : indices.dim(0), 1});
  const int64_t nnz = as_matrix.dim(0);
  const bool scalar_value = values.rank() == 0;
  const Tensor spread = scalar_value ? Tensor(values.dtype(), Dims{nnz}) : values;
  if (scalar_value) {
    for (int64_t i = 0; i < nnz; ++i) CopyElements(values.dtype(), ElementPtr(spread, i), values.raw_data(), 1);
  }
  const Sparse s = ReadSparse(ctx.op, as_matrix, spread, ctx.input(1));
  if (ctx.attrs.GetBool("validate_indices")) CheckOrdered(ctx.op, s, "");
  Tensor& out = ctx.allocate_output(0, s.shape);
  const Dims strides = RowMajorStrides(s.shape);
  VisitAll(values.dtype(), "SparseToDense", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = out.data<T>();
    std::fill(po, po + out.num_elements(), default_value.data<T>()[0]);
    const T* pv = spread.data<T>();
    for (int64_t i = 0; i < nnz; ++i) po[s.Offset(i, strides)] = pv[i];
  });
}

OpDef MakeSparseToDense() {
  OpDef op;
  op.name = "SparseToDense";
  op.inputs = {{"sparse_indices", false, "Tindices", kIndexTypes},
               {"output_shape", false, "Tindices", kIndexTypes},
               {"sparse_values", false, "T", kAllTypes},
               {"default_value", false, "T", kAllTypes}};
  op.outputs = {"dense"};
  op.attrs = {{"validate_indices", AttrType::kBool, AttrValue(true)}};
  op.dtype_fn = SameDTypeAsInput(2);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{ShapeFromValue(c, 1)}; };
  op.kernel = SparseToDenseKernel;
  op.doc = "A dense tensor of shape `output_shape` holding `sparse_values` at `sparse_indices` and "
           "`default_value` elsewhere.";
  return op;
}

// ---- SparseTensorDenseAdd ------------------------------------------------------------

void SparseTensorDenseAddKernel(KernelContext& ctx) {
  const Sparse s = ReadSparse(ctx.op, ctx.input(0), ctx.input(1), ctx.input(2));
  const Tensor& b = ctx.input(3);
  if (b.shape() != s.shape) {
    ThrowInvalidArgument("SparseTensorDenseAdd: the dense shapes differ: ", DimsToString(s.shape), " (sparse) vs. ",
                         DimsToString(b.shape()), " (dense)");
  }
  Tensor& out = ctx.allocate_output(0, b.shape());
  const Dims strides = RowMajorStrides(s.shape);
  VisitNumeric(b.dtype(), "SparseTensorDenseAdd", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = out.data<T>();
    std::copy_n(b.data<T>(), b.num_elements(), po);
    const T* pv = ctx.input(1).data<T>();
    for (int64_t i = 0; i < s.nnz; ++i) po[s.Offset(i, strides)] += pv[i];
  });
}

OpDef MakeSparseTensorDenseAdd() {
  OpDef op;
  op.name = "SparseTensorDenseAdd";
  op.inputs = {{"a_indices", false, "Tindices", kIndexTypes}, {"a_values", false, "T", kNumericTypes},
               {"a_shape", false, "Tindices", kIndexTypes}, {"b", false, "T", kNumericTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(3);
  op.shape_fn = SameShapeAsInput(3);
  op.kernel = SparseTensorDenseAddKernel;
  op.doc = "The dense `b` plus the sparse tensor (a_indices, a_values, a_shape) of the same shape.";
  return op;
}

// ---- SparseTensorDenseMatMul ---------------------------------------------------------

void SparseMatMulKernel(KernelContext& ctx) {
  const Sparse s = ReadSparse(ctx.op, ctx.input(0), ctx.input(1), ctx.input(2), "a's ");
  const Tensor& b = ctx.input(3);
  if (s.rank != 2) ThrowInvalidArgument("SparseTensorDenseMatMul: a must be a matrix, got rank ", s.rank);
  if (b.rank() != 2) ThrowInvalidArgument("SparseTensorDenseMatMul: b must be a matrix, got shape ", DimsToString(b.shape()));
  const bool adj_a = ctx.attrs.GetBool("adjoint_a"), adj_b = ctx.attrs.GetBool("adjoint_b");
  const int64_t m = adj_a ? s.shape[1] : s.shape[0];
  const int64_t k = adj_a ? s.shape[0] : s.shape[1];
  const int64_t kb = adj_b ? b.dim(1) : b.dim(0);
  const int64_t n = adj_b ? b.dim(0) : b.dim(1);
  if (k != kb) {
    ThrowInvalidArgument("SparseTensorDenseMatMul: cannot multiply a (", m, " x ", k, " after adjoint_a) by b (", kb,
                         " x ", n, " after adjoint_b): inner dimensions differ");
  }
  Tensor& out = ctx.allocate_output(0, Dims{m, n});
  VisitFloat(b.dtype(), "SparseTensorDenseMatMul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = out.data<T>();
    std::fill(po, po + m * n, T(0));
    const T* pv = ctx.input(1).data<T>();
    const T* pb = b.data<T>();
    for (int64_t i = 0; i < s.nnz; ++i) {
      const int64_t r = adj_a ? s.row(i)[1] : s.row(i)[0];
      const int64_t c = adj_a ? s.row(i)[0] : s.row(i)[1];
      T* orow = po + r * n;
      if (adj_b) {
        for (int64_t j = 0; j < n; ++j) orow[j] += pv[i] * pb[j * b.dim(1) + c];
      } else {
        const T* brow = pb + c * n;
        for (int64_t j = 0; j < n; ++j) orow[j] += pv[i] * brow[j];
      }
    }
  });
}

OpDef MakeSparseTensorDenseMatMul() {
  OpDef op;
  op.name = "SparseTensorDenseMatMul";
  op.inputs = {{"a_indices", false, "Tindices", kIndexTypes}, {"a_values", false, "T", kFloatTypes},
               {"a_shape", false, "", kInt64Type}, {"b", false, "T", kFloatTypes}};
  op.outputs = {"product"};
  op.attrs = {{"adjoint_a", AttrType::kBool, AttrValue(false)}, {"adjoint_b", AttrType::kBool, AttrValue(false)}};
  op.dtype_fn = SameDTypeAsInput(3);
  op.shape_fn = [](const InferContext& c) {
    const bool adj_a = c.attrs.GetBool("adjoint_a"), adj_b = c.attrs.GetBool("adjoint_b");
    const PartialShape a = ShapeFromValue(c, 2);
    const PartialShape& b = c.shapes[3];
    const int64_t m = a.known_rank && a.rank() == 2 ? a.dims[adj_a ? 1 : 0] : kUnknownDim;
    const int64_t n = b.known_rank && b.rank() == 2 ? b.dims[adj_b ? 0 : 1] : kUnknownDim;
    return std::vector<PartialShape>{PartialShape(Dims{m, n})};
  };
  op.kernel = SparseMatMulKernel;
  op.doc = "The matrix product of the sparse matrix a (transposed with adjoint_a) and the dense b (transposed with "
           "adjoint_b).";
  return op;
}

// ---- SparseAdd and SparseAddGrad ------------------------------------------------------

Sparse ReadOrdered(const OpDef& op, const Tensor& indices, const Tensor& values, const Tensor& shape,
                   const char* which) {
  Sparse s = ReadSparse(op, indices, values, shape, which);
  CheckOrdered(op, s, which);
  return s;
}

void SparseAddKernel(KernelContext& ctx) {
  const Sparse a = ReadOrdered(ctx.op, ctx.input(0), ctx.input(1), ctx.input(2), "a's ");
  const Sparse b = ReadOrdered(ctx.op, ctx.input(3), ctx.input(4), ctx.input(5), "b's ");
  if (a.shape != b.shape) {
    ThrowInvalidArgument("SparseAdd: the operands' dense shapes differ: ", DimsToString(a.shape), " vs. ",
                         DimsToString(b.shape));
  }
  const Tensor& thresh = ctx.input(6);
  if (thresh.num_elements() != 1) ThrowInvalidArgument("SparseAdd: thresh must be a scalar");
  VisitNumeric(ctx.input(1).dtype(), "SparseAdd", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* av = ctx.input(1).data<T>();
    const T* bv = ctx.input(4).data<T>();
    const T limit = thresh.data<T>()[0];
    std::vector<T> sums;
    std::vector<const int64_t*> where;
    int64_t i = 0, j = 0;
    auto keep = [&](T v, const int64_t* at) {
      if (std::abs(v) >= limit) {
        sums.push_back(v);
        where.push_back(at);
      }
    };
    while (i < a.nnz || j < b.nnz) {
      const int cmp = i == a.nnz ? 1 : j == b.nnz ? -1 : CompareRows(a, i, b, j);
      if (cmp < 0) keep(av[i], a.row(i)), ++i;
      else if (cmp > 0) keep(bv[j], b.row(j)), ++j;
      else keep(static_cast<T>(av[i] + bv[j]), a.row(i)), ++i, ++j;
    }
    const int64_t n = static_cast<int64_t>(sums.size());
    Tensor& oi = ctx.allocate_output(0, Dims{n, a.rank});
    Tensor& ov = ctx.allocate_output(1, Dims{n});
    Tensor& os = ctx.allocate_output(2, Dims{a.rank});
    for (int64_t r = 0; r < n; ++r) std::copy_n(where[r], a.rank, oi.data<int64_t>() + r * a.rank);
    std::copy(sums.begin(), sums.end(), ov.data<T>());
    std::copy(a.shape.begin(), a.shape.end(), os.data<int64_t>());
  });
}

OpDef MakeSparseAdd() {
  OpDef op;
  op.name = "SparseAdd";
  op.inputs = {{"a_indices", false, "", kInt64Type}, {"a_values", false, "T", kNumericTypes},
               {"a_shape", false, "", kInt64Type},   {"b_indices", false, "", kInt64Type},
               {"b_values", false, "T", kNumericTypes}, {"b_shape", false, "", kInt64Type},
               {"thresh", false, "T", kNumericTypes}};
  op.outputs = {"sum_indices", "sum_values", "sum_shape"};
  op.dtype_fn = [](const InferContext& c) {
    return std::vector<DType>{DType::kInt64, c.dtypes[1], DType::kInt64};
  };
  op.shape_fn = [](const InferContext& c) {
    const PartialShape& s = c.shapes[2];
    const int64_t rank = s.known_rank && s.rank() == 1 ? s.dims[0] : kUnknownDim;
    return std::vector<PartialShape>{PartialShape(Dims{kUnknownDim, rank}), PartialShape(Dims{kUnknownDim}),
                                     PartialShape(Dims{rank})};
  };
  op.kernel = SparseAddKernel;
  op.doc = "The sum of two sparse tensors of one dense shape, each in row-major order; sums whose magnitude is "
           "below `thresh` are dropped.";
  return op;
}

void SparseAddGradKernel(KernelContext& ctx) {
  const Tensor& grad = ctx.input(0);
  auto read = [&](int i, const char* which) {
    const Tensor& t = ctx.input(i);
    if (t.rank() != 2) ThrowInvalidArgument("SparseAddGrad: ", which, " must be a matrix");
    Sparse s;
    s.nnz = t.dim(0);
    s.rank = static_cast<int>(t.dim(1));
    s.index = ReadInts(t);
    return s;
  };
  const Sparse a = read(1, "a_indices"), b = read(2, "b_indices"), sum = read(3, "sum_indices");
  if (a.rank != sum.rank || b.rank != sum.rank) ThrowInvalidArgument("SparseAddGrad: the indices' ranks differ");
  if (grad.rank() != 1 || grad.dim(0) != sum.nnz) {
    ThrowInvalidArgument("SparseAddGrad: backprop_val_grad must have one entry per sum index (", sum.nnz, ")");
  }
  Tensor& ga = ctx.allocate_output(0, Dims{a.nnz});
  Tensor& gb = ctx.allocate_output(1, Dims{b.nnz});
  VisitNumeric(grad.dtype(), "SparseAddGrad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pg = grad.data<T>();
    T* pa = ga.data<T>();
    T* pb = gb.data<T>();
    std::fill(pa, pa + a.nnz, T(0));
    std::fill(pb, pb + b.nnz, T(0));
    // Walk the three ordered lists together: a sum entry takes a's and/or b's
    // entry at the same index; entries dropped by the threshold get zero.
    int64_t i = 0, j = 0;
    for (int64_t k = 0; k < sum.nnz; ++k) {
      while (i < a.nnz && CompareRows(a, i, sum, k) < 0) ++i;
      while (j < b.nnz && CompareRows(b, j, sum, k) < 0) ++j;
      if (i < a.nnz && CompareRows(a, i, sum, k) == 0) pa[i++] = pg[k];
      if (j < b.nnz && CompareRows(b, j, sum, k) == 0) pb[j++] = pg[k];
    }
  });
}

OpDef MakeSparseAddGrad() {
  OpDef op;
  op.name = "SparseAddGrad";
  op.inputs = {{"backprop_val_grad", false, "T", kNumericTypes}, {"a_indices", false, "", kInt64Type},
               {"b_indices", false, "", kInt64Type}, {"sum_indices", false, "", kInt64Type}};
  op.outputs = {"a_val_grad", "b_val_grad"};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{c.dtypes[0], c.dtypes[0]}; };
  op.shape_fn = [](const InferContext& c) {
    auto rows = [&](int i) {
      const PartialShape& s = c.shapes[i];
      return PartialShape(Dims{s.known_rank && s.rank() >= 1 ? s.dims[0] : kUnknownDim});
    };
    return std::vector<PartialShape>{rows(1), rows(2)};
  };
  op.kernel = SparseAddGradKernel;
  op.doc = "The gradient of SparseAdd with respect to a's and b's values, from that of the sum's values.";
  return op;
}

// ---- SparseReduceSum -----------------------------------------------------------------

std::vector<bool> SparseReductionMask(const OpDef& op, const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      ThrowInvalidArgument(op.name, ": Invalid reduction dimension ", a, " for input with ", rank, " dimension(s)");
    }
    mask[a < 0 ? a + rank : a] = true;
  }
  return mask;
}

Dims SparseReducedDims(const Dims& in, const std::vector<bool>& mask, bool keep_dims) {
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!mask[d]) out.push_back(in[d]);
    else if (keep_dims) out.push_back(1);
  }
  return out;
}

void SparseReduceSumKernel(KernelContext& ctx) {
  const Sparse s = ReadSparse(ctx.op, ctx.input(0), ctx.input(1), ctx.input(2));
  const std::vector<bool> mask = SparseReductionMask(ctx.op, ReadInts(ctx.input(3)), s.rank);
  const bool keep_dims = ctx.attrs.GetBool("keep_dims");
  Tensor& out = ctx.allocate_output(0, SparseReducedDims(s.shape, mask, keep_dims));
  const Dims kept_shape = SparseReducedDims(s.shape, mask, true);
  const Dims strides = RowMajorStrides(kept_shape);
  VisitNumeric(ctx.input(1).dtype(), "SparseReduceSum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = out.data<T>();
    std::fill(po, po + out.num_elements(), T(0));
    const T* pv = ctx.input(1).data<T>();
    for (int64_t i = 0; i < s.nnz; ++i) {
      int64_t at = 0;
      for (int d = 0; d < s.rank; ++d) {
        if (!mask[d]) at += s.row(i)[d] * strides[d];
      }
      po[at] += pv[i];
    }
  });
}

OpDef MakeSparseReduceSum() {
  OpDef op;
  op.name = "SparseReduceSum";
  op.inputs = {{"input_indices", false, "", kInt64Type}, {"input_values", false, "T", kNumericTypes},
               {"input_shape", false, "", kInt64Type}, {"reduction_axes", false, "", {DType::kInt32}}};
  op.outputs = {"output"};
  op.attrs = {{"keep_dims", AttrType::kBool, AttrValue(false)}};
  op.dtype_fn = SameDTypeAsInput(1);
  op.shape_fn = [](const InferContext& c) {
    const PartialShape in = ShapeFromValue(c, 2);
    auto axes = c.IntValues(3);
    if (!in.known_rank || !axes) return std::vector<PartialShape>{PartialShape::Unknown()};
    const std::vector<bool> mask = SparseReductionMask(c.op, *axes, in.rank());
    return std::vector<PartialShape>{PartialShape(SparseReducedDims(in.dims, mask, c.attrs.GetBool("keep_dims")))};
  };
  op.kernel = SparseReduceSumKernel;
  op.doc = "The dense sum of a sparse tensor's values along `reduction_axes`.";
  return op;
}

// ---- SparseReorder -------------------------------------------------------------------

void SparseReorderKernel(KernelContext& ctx) {
  const Sparse s = ReadSparse(ctx.op, ctx.input(0), ctx.input(1), ctx.input(2));
  std::vector<int64_t> order(s.nnz);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return CompareRows(s, x, s, y) < 0; });
  Tensor& oi = ctx.allocate_output(0, Dims{s.nnz, s.rank});
  Tensor& ov = ctx.allocate_output(1, Dims{s.nnz});
  const Tensor& values = ctx.input(1);
  for (int64_t r = 0; r < s.nnz; ++r) {
    std::copy_n(s.row(order[r]), s.rank, oi.data<int64_t>() + r * s.rank);
    CopyElements(values.dtype(), ElementPtr(ov, r), ElementPtr(values, order[r]), 1);
  }
}

OpDef MakeSparseReorder() {
  OpDef op;
  op.name = "SparseReorder";
  op.inputs = {{"input_indices", false, "", kInt64Type}, {"input_values", false, "T", kAllTypes},
               {"input_shape", false, "", kInt64Type}};
  op.outputs = {"output_indices", "output_values"};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{DType::kInt64, c.dtypes[1]}; };
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{c.shapes[0], c.shapes[1]}; };
  op.kernel = SparseReorderKernel;
  op.doc = "The same sparse tensor with its entries in row-major order (entries with equal indices keep their "
           "order).";
  return op;
}

OpRegistrar sparse_to_dense_op(MakeSparseToDense());
OpRegistrar sparse_dense_add_op(MakeSparseTensorDenseAdd());
OpRegistrar sparse_matmul_op(MakeSparseTensorDenseMatMul());
OpRegistrar sparse_add_op(MakeSparseAdd());
OpRegistrar sparse_add_grad_op(MakeSparseAddGrad());
OpRegistrar sparse_reduce_sum_op(MakeSparseReduceSum());
OpRegistrar sparse_reorder_op(MakeSparseReorder());

}  // namespace
}  // namespace treadle
