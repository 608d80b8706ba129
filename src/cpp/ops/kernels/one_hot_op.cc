// OneHot: for each index, a vector of `depth` values that are off_value except
// on_value at the index. Indices outside [0, depth) give all off_value.
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

PartialShape OneHotShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  auto depth = ScalarIntInput(c, 1, "depth");
  CheckInputRank(c, 2, 0, "on_value");
  CheckInputRank(c, 3, 0, "off_value");
  if (depth && *depth < 0) ThrowValueError(c.op.name, ": depth must be non-negative, got: ", *depth);
  if (!in.known_rank) return PartialShape::Unknown();
  const int64_t rank = in.rank();
  const int64_t axis = c.attrs.GetInt("axis");
  if (axis < -1 || axis > rank) {
    ThrowValueError(c.op.name, ": expected axis to be -1 or between [0, ", rank, "]. But received: ", axis);
  }
  CheckOutputRank(c.op, rank + 1);
  Dims out = in.dims;
  out.insert(out.begin() + (axis == -1 ? rank : axis), depth ? *depth : kUnknownDim);
  CheckedProduct(c.op, out);
  return PartialShape(out);
}

template <typename T, typename Index>
void WriteOneHot(const Index* indices, int64_t prefix, int64_t depth, int64_t suffix, const T& on, const T& off,
                 T* out) {
  std::fill_n(out, prefix * depth * suffix, off);
  for (int64_t p = 0; p < prefix; ++p) {
    for (int64_t s = 0; s < suffix; ++s) {
      const Index i = indices[p * suffix + s];
      if (i >= 0 && i < depth) out[(p * depth + i) * suffix + s] = on;
    }
  }
}

void OneHotKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  Tensor& out = ctx.allocate_output(0);
  const int64_t rank = indices.rank();
  int64_t axis = ctx.attrs.GetInt("axis");
  if (axis == -1) axis = rank;
  const int64_t depth = ReadInts(ctx.input(1))[0];
  const int64_t prefix = DimProduct(indices.shape(), 0, static_cast<int>(axis));
  const int64_t suffix = DimProduct(indices.shape(), static_cast<int>(axis), static_cast<int>(rank));
  VisitAll(out.dtype(), "OneHot", [&](auto vtag) {
    using T = typename decltype(vtag)::type;
    const T& on = *ctx.input(2).data<T>();
    const T& off = *ctx.input(3).data<T>();
    VisitInt(indices.dtype(), "OneHot", [&](auto itag) {
      using Index = typename decltype(itag)::type;
      WriteOneHot<T, Index>(indices.data<Index>(), prefix, depth, suffix, on, off, out.data<T>());
    });
  });
}

OpDef MakeOneHot() {
  OpDef op;
  op.name = "OneHot";
  op.inputs = {{"indices", false, "TI", kIndexTypes},
               {"depth", false, "", kIndexTypes},
               {"on_value", false, "T", kAllTypes},
               {"off_value", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"axis", AttrType::kInt, AttrValue(int64_t{-1})}};
  op.dtype_fn = SameDTypeAsInput(2);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{OneHotShape(c)}; };
  op.kernel = OneHotKernel;
  op.doc = "One-hot vectors of length `depth` along a new dimension `axis` (-1: last).";
  return op;
}

OpRegistrar one_hot_op(WithNarrowTypes(MakeOneHot(), kNarrowTypes));

}  // namespace
}  // namespace treadle
