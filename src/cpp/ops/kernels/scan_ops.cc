// Cumsum and Cumprod: running sums and products along one axis, optionally
// exclusive (each element leaves itself out) and reversed (from the end).
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"

namespace treadle {
namespace {

// x viewed as [outer, n, inner] around the scanned axis.
template <typename T, typename Combine>
void Scan(const Tensor& x, Tensor& out, int axis, bool exclusive, bool reverse, T identity, Combine combine) {
  const Dims& d = x.shape();
  const int64_t outer = DimProduct(d, 0, axis), n = d[axis];
  const int64_t inner = DimProduct(d, axis + 1, static_cast<int>(d.size()));
  const T* src = x.data<T>();
  T* dst = out.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      T acc = identity;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t j = reverse ? n - 1 - k : k;
        const int64_t at = (o * n + j) * inner + i;
        if (exclusive) {
          dst[at] = acc;
          acc = combine(acc, src[at]);
        } else {
          acc = combine(acc, src[at]);
          dst[at] = acc;
        }
      }
    }
  }
}

template <bool kProduct>
OpDef MakeScan(const char* name, std::vector<std::string> api) {
  OpDef op;
  op.name = name;
  op.inputs = {{"x", false, "T", kNumericTypes}, {"axis", false, "Tidx", kIndexTypes}};
  op.outputs = {"out"};
  op.attrs = {{"exclusive", AttrType::kBool, AttrValue(false)}, {"reverse", AttrType::kBool, AttrValue(false)}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    auto axis = ScalarIntInput(c, 1, "axis");
    if (axis && c.shapes[0].known_rank) NormalizeAxis(c.op, *axis, c.shapes[0].rank());
    return std::vector<PartialShape>{c.shapes[0]};
  };
  op.api_names = std::move(api);
  op.kernel = [name](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> axis_values = ReadInts(ctx.input(1));
    if (axis_values.size() != 1) ThrowInvalidArgument(name, ": axis must be a scalar");
    const int axis = static_cast<int>(NormalizeAxis(ctx.op, axis_values[0], x.rank()));
    const bool exclusive = ctx.attrs.GetBool("exclusive"), reverse = ctx.attrs.GetBool("reverse");
    Tensor& out = ctx.allocate_output(0);
    VisitNumeric(x.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kProduct) {
        Scan<T>(x, out, axis, exclusive, reverse, T(1), [](T a, T b) { return a * b; });
      } else {
        Scan<T>(x, out, axis, exclusive, reverse, T(0), [](T a, T b) { return a + b; });
      }
    });
  };
  op.doc = kProduct ? "Running products of x along axis (exclusive: without the element itself; reverse: from the end)."
                    : "Running sums of x along axis (exclusive: without the element itself; reverse: from the end).";
  return op;
}

OpRegistrar cumsum_op(WithNarrowTypes(MakeScan<false>("Cumsum", {"cumsum", "math.cumsum"}), kNarrowTypes));
OpRegistrar cumprod_op(WithNarrowTypes(MakeScan<true>("Cumprod", {"cumprod", "math.cumprod"}), kNarrowTypes));

}  // namespace
}  // namespace treadle
