// Ops indexed by tuples of indices (the last dimension of `indices`):
// GatherNd reads slices, ScatterNd sums updates into zeros, and
// TensorScatterUpdate/Add/Sub write, add or subtract them in a copy of a tensor.
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"

namespace treadle {
namespace {

// How `indices` ([..., K]) addresses a tensor of shape `dims`: `count` index
// tuples, each naming a slice of `slice` elements at `offsets[i]`.
struct NdIndex {
  int64_t count = 0;
  int64_t slice = 1;
  std::vector<int64_t> offsets;
};

NdIndex ResolveIndices(const OpDef& op, const Tensor& indices, const Dims& dims) {
  if (indices.rank() < 1) ThrowInvalidArgument(op.name, ": indices must have rank >= 1, got a scalar");
  const int64_t k = indices.dim(indices.rank() - 1);
  if (k > static_cast<int64_t>(dims.size())) {
    ThrowInvalidArgument(op.name, ": the last dimension of indices (", k, ") must be at most the rank of the ",
                         "indexed tensor (", dims.size(), ")");
  }
  NdIndex r;
  r.slice = DimProduct(dims, static_cast<int>(k), static_cast<int>(dims.size()));
  r.count = DimProduct(indices.shape(), 0, indices.rank() - 1);
  const std::vector<int64_t> v = ReadInts(indices);
  const Dims strides = RowMajorStrides(dims);
  r.offsets.resize(r.count);
  for (int64_t i = 0; i < r.count; ++i) {
    int64_t at = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t x = v[i * k + j];
      if (x < 0 || x >= dims[j]) {
        ThrowInvalidArgument(op.name, ": indices[", i, "] = [", x, "...] does not index into param shape ",
                             DimsToString(dims), " (index ", x, " is out of range in dimension ", j, ")");
      }
      at += x * strides[j];
    }
    r.offsets[i] = at;
  }
  return r;
}

// indices.shape[:-1] + dims[K:], or unknown dims where not known.
PartialShape NdSliceShape(const PartialShape& indices, const PartialShape& dims) {
  if (!indices.known_rank || indices.rank() < 1) return PartialShape::Unknown();
  const int64_t k = indices.dims.back();
  if (k == kUnknownDim || !dims.known_rank) return PartialShape::Unknown();
  Dims out(indices.dims.begin(), indices.dims.end() - 1);
  if (k > dims.rank()) return PartialShape::Unknown();  // the kernel says what is wrong
  out.insert(out.end(), dims.dims.begin() + k, dims.dims.end());
  return PartialShape(out);
}

// ---- GatherNd ---------------------------------------------------------------

void GatherNdKernel(KernelContext& ctx) {
  const Tensor& params = ctx.input(0);
  const NdIndex ix = ResolveIndices(ctx.op, ctx.input(1), params.shape());
  Tensor& out = ctx.allocate_output(0);
  for (int64_t i = 0; i < ix.count; ++i) {
    CopyElements(params.dtype(), ElementPtr(out, i * ix.slice), ElementPtr(params, ix.offsets[i]), ix.slice);
  }
}

OpDef MakeGatherNd() {
  OpDef op;
  op.name = "GatherNd";
  op.inputs = {{"params", false, "Tparams", kAllTypes}, {"indices", false, "Tindices", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    return std::vector<PartialShape>{NdSliceShape(c.shapes[1], c.shapes[0])};
  };
  op.kernel = GatherNdKernel;
  op.api_names = {"gather_nd"};
  op.doc = "The slices of `params` that the index tuples in the last dimension of `indices` name.";
  return op;
}

// ---- scatters ---------------------------------------------------------------

enum class Mode { kUpdate, kAdd, kSub };

// Writes (or adds, subtracts) the updates into `out` at the index tuples.
void ScatterInto(const OpDef& op, Tensor& out, const Tensor& indices, const Tensor& updates, Mode mode) {
  const NdIndex ix = ResolveIndices(op, indices, out.shape());
  Dims expected(indices.shape().begin(), indices.shape().end() - 1);
  const int64_t k = indices.dim(indices.rank() - 1);
  expected.insert(expected.end(), out.shape().begin() + k, out.shape().end());
  if (updates.shape() != expected) {
    ThrowInvalidArgument(op.name, ": updates must have shape ", DimsToString(expected), " (indices.shape[:-1] + ",
                         "shape[indices.shape[-1]:]), got ", DimsToString(updates.shape()));
  }
  if (mode == Mode::kUpdate) {
    for (int64_t i = 0; i < ix.count; ++i) {
      CopyElements(out.dtype(), ElementPtr(out, ix.offsets[i]), ElementPtr(updates, i * ix.slice), ix.slice);
    }
    return;
  }
  VisitNumeric(out.dtype(), op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    const T* src = updates.data<T>();
    for (int64_t i = 0; i < ix.count; ++i) {
      T* row = dst + ix.offsets[i];
      const T* u = src + i * ix.slice;
      for (int64_t j = 0; j < ix.slice; ++j) row[j] = mode == Mode::kAdd ? row[j] + u[j] : row[j] - u[j];
    }
  });
}

void ScatterNdKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& updates = ctx.input(1);
  Tensor& out = ctx.allocate_output(0);
  VisitNumeric(out.dtype(), "ScatterNd", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill_n(out.data<T>(), out.num_elements(), T(0));
  });
  ScatterInto(ctx.op, out, indices, updates, Mode::kAdd);
}

OpDef MakeScatterNd() {
  OpDef op;
  op.name = "ScatterNd";
  op.inputs = {{"indices", false, "Tindices", kIndexTypes}, {"updates", false, "T", kNumericTypes},
               {"shape", false, "Tindices", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(1);
  op.shape_fn = [](const InferContext& c) {
    auto dims = c.IntValues(2);
    if (!dims) {
      const PartialShape& s = c.shapes[2];
      if (s.known_rank && s.rank() == 1 && s.dims[0] != kUnknownDim) {
        return std::vector<PartialShape>{PartialShape::UnknownOfRank(static_cast<int>(s.dims[0]))};
      }
      return std::vector<PartialShape>{PartialShape::Unknown()};
    }
    for (int64_t d : *dims) {
      if (d < 0) ThrowInvalidArgument("ScatterNd: shape must be non-negative, got ", d);
    }
    CheckedProduct(c.op, *dims);
    return std::vector<PartialShape>{PartialShape(*dims)};
  };
  op.kernel = ScatterNdKernel;
  op.api_names = {"scatter_nd"};
  op.doc = "Zeros of `shape` with `updates` added at the index tuples of `indices` (duplicates add up).";
  return op;
}

template <Mode kMode>
OpDef MakeTensorScatter(const char* name, std::vector<DType> types, std::vector<std::string> api, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"tensor", false, "T", types}, {"indices", false, "Tindices", kIndexTypes},
               {"updates", false, "T", types}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = [](KernelContext& ctx) {
    const Tensor& tensor = ctx.input(0);
    Tensor& out = ctx.allocate_output(0);
    CopyElements(tensor.dtype(), ElementPtr(out, 0), ElementPtr(tensor, 0), tensor.num_elements());
    ScatterInto(ctx.op, out, ctx.input(1), ctx.input(2), kMode);
  };
  op.api_names = std::move(api);
  op.doc = doc;
  return WithNarrowTypes(std::move(op), kNarrowTypes);
}

OpRegistrar gather_nd_op(WithNarrowTypes(MakeGatherNd(), kNarrowTypes));
OpRegistrar scatter_nd_op(WithNarrowTypes(MakeScatterNd(), kNarrowTypes));
OpRegistrar tensor_scatter_update_op(MakeTensorScatter<Mode::kUpdate>(
    "TensorScatterUpdate", kAllTypes, {"tensor_scatter_nd_update"},
    "A copy of `tensor` with the slices at the index tuples of `indices` replaced by `updates`."));
OpRegistrar tensor_scatter_add_op(MakeTensorScatter<Mode::kAdd>(
    "TensorScatterAdd", kNumericTypes, {"tensor_scatter_nd_add"},
    "A copy of `tensor` with `updates` added at the index tuples of `indices` (duplicates add up)."));
OpRegistrar tensor_scatter_sub_op(MakeTensorScatter<Mode::kSub>(
    "TensorScatterSub", kNumericTypes, {"tensor_scatter_nd_sub"},
    "A copy of `tensor` with `updates` subtracted at the index tuples of `indices`."));

}  // namespace
}  // namespace treadle
