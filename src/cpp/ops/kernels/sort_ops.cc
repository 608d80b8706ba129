// TopKV2: the k largest entries of each row (the last dimension) and their
// indices, largest first, ties in index order. td.sort, td.argsort and
// td.math.top_k are built on it.
#include <algorithm>
#include <limits>
#include <numeric>

#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"

namespace treadle {
namespace {

std::vector<PartialShape> TopKShapes(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  if (in.known_rank && in.rank() < 1) ThrowValueError("TopKV2: input must have rank >= 1, got a scalar");
  auto k = ScalarIntInput(c, 1, "k");
  if (k && *k < 0) ThrowValueError("TopKV2: k must be non-negative, got ", *k);
  if (!in.known_rank) return {PartialShape::Unknown(), PartialShape::Unknown()};
  Dims out(in.dims);
  if (k && out.back() != kUnknownDim && *k > out.back()) {
    ThrowValueError("TopKV2: input must have at least k=", *k, " columns, got ", out.back());
  }
  out.back() = k ? *k : kUnknownDim;
  return {PartialShape(out), PartialShape(out)};
}

template <typename T>
void TopKRows(const Tensor& x, int64_t k, Tensor& values, Tensor& indices) {
  const int64_t n = x.dim(x.rank() - 1);
  const int64_t rows = n == 0 ? 0 : x.num_elements() / n;
  const T* src = x.data<T>();
  T* pv = values.data<T>();
  int32_t* pi = indices.data<int32_t>();
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = src + r * n;
    std::iota(order.begin(), order.end(), 0);
    // Larger first; equal values keep their index order (NaN counts as the largest, as in TensorFlow).
    auto greater = [row](int32_t a, int32_t b) {
      const T va = row[a], vb = row[b];
      const bool na = va != va, nb = vb != vb;  // NaN
      if (na != nb) return na;
      if (na) return a < b;
      return va > vb || (va == vb && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), greater);
    for (int64_t j = 0; j < k; ++j) {
      pv[r * k + j] = row[order[j]];
      pi[r * k + j] = order[j];
    }
  }
}

void TopKKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1) ThrowInvalidArgument("TopKV2: input must have rank >= 1, got a scalar");
  const std::vector<int64_t> kv = ReadInts(ctx.input(1));
  if (kv.size() != 1) ThrowInvalidArgument("TopKV2: k must be a scalar");
  const int64_t k = kv[0], n = x.dim(x.rank() - 1);
  if (k < 0 || k > n) ThrowInvalidArgument("TopKV2: input must have at least k=", k, " columns, got ", n);
  if (n > std::numeric_limits<int32_t>::max()) ThrowInvalidArgument("TopKV2: rows longer than 2^31 are not supported");
  Dims shape = x.shape();
  shape.back() = k;
  Tensor& values = ctx.allocate_output(0, shape);
  Tensor& indices = ctx.allocate_output(1, shape);
  VisitNumeric(x.dtype(), "TopKV2", [&](auto tag) {
    using T = typename decltype(tag)::type;
    TopKRows<T>(x, k, values, indices);
  });
}

OpDef MakeTopK() {
  OpDef op;
  op.name = "TopKV2";
  op.inputs = {{"input", false, "T", kNumericTypes}, {"k", false, "Tk", kIndexTypes}};
  op.outputs = {"values", "indices"};
  op.attrs = {{"sorted", AttrType::kBool, AttrValue(true)}};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{c.dtypes[0], DType::kInt32}; };
  op.shape_fn = TopKShapes;
  op.kernel = TopKKernel;
  op.doc = "The k largest entries of each row of `input` (its last dimension), largest first (ties in index "
           "order), and their int32 indices.";
  return op;
}

OpRegistrar top_k_op(WithNarrowTypes(MakeTopK(), kNarrowTypes));

}  // namespace
}  // namespace treadle
