// Ops that make new tensors from a shape and a value: Fill, Range, ZerosLike
// and OnesLike.
#include <cmath>
#include <type_traits>

#include "ops/shape_values.h"
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

// ---- Fill -------------------------------------------------------------------

PartialShape FillShape(const InferContext& c) {
  CheckInputRank(c, 0, 1, "dims");
  CheckInputRank(c, 1, 0, "value");
  auto dims = c.IntValues(0);
  if (!dims) {  // what is known of a computed shape (ops/shape_values.h)
    PartialShape out = ShapeOperand(c, 0);
    if (out.known_rank) CheckOutputRank(c.op, out.rank());
    return out;
  }
  CheckOutputRank(c.op, static_cast<int64_t>(dims->size()));
  for (size_t i = 0; i < dims->size(); ++i) {
    if ((*dims)[i] < 0) ThrowValueError(c.op.name, ": dims[", i, "] = ", (*dims)[i], " must be non-negative");
  }
  Dims out(dims->begin(), dims->end());
  CheckedProduct(c.op, out);
  return PartialShape(out);
}

// Sets every element of `out` to `value` (a scalar of the same dtype).
void FillWith(Tensor& out, const Tensor& value) {
  VisitAll(out.dtype(), "Fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill_n(out.data<T>(), out.num_elements(), *value.data<T>());
  });
}

OpDef MakeFill() {
  OpDef op;
  op.name = "Fill";
  op.inputs = {{"dims", false, "index_type", kIndexTypes}, {"value", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(1);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{FillShape(c)}; };
  op.kernel = [](KernelContext& ctx) { FillWith(ctx.allocate_output(0), ctx.input(1)); };
  op.doc = "A tensor of shape `dims` with every element `value`.";
  return op;
}

// ---- Range ------------------------------------------------------------------

// The number of elements of [start, limit) by delta, with TensorFlow's checks.
template <typename T>
int64_t RangeSize(const OpDef& op, T start, T limit, T delta) {
  if (delta == 0) ThrowValueError(op.name, ": requires delta != 0: ", delta);
  if (delta > 0 && start > limit) {
    ThrowValueError(op.name, ": requires start <= limit when delta > 0: ", start, "/", limit);
  }
  if (delta < 0 && start < limit) {
    ThrowValueError(op.name, ": requires start >= limit when delta < 0: ", start, "/", limit);
  }
  uint64_t size;
  if constexpr (std::is_integral_v<T>) {
    // Unsigned arithmetic: |limit - start| may not fit the signed type.
    const uint64_t span = start <= limit ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                                         : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    const uint64_t step = delta > 0 ? static_cast<uint64_t>(delta) : uint64_t{0} - static_cast<uint64_t>(delta);
    size = span / step + (span % step != 0);
  } else {
    if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) {
      ThrowValueError(op.name, ": start, limit and delta must be finite, got ", start, ", ", limit, ", ", delta);
    }
    const double n = std::ceil(std::abs((static_cast<double>(limit) - start) / delta));
    if (n > static_cast<double>(kMaxElements)) ThrowValueError(op.name, ": range would have ", n, " elements");
    size = static_cast<uint64_t>(n);
  }
  if (size > static_cast<uint64_t>(kMaxElements)) {
    ThrowValueError(op.name, ": range would have ", size, " elements, more than 2^40");
  }
  return static_cast<int64_t>(size);
}

PartialShape RangeShape(const InferContext& c) {
  CheckInputRank(c, 0, 0, "start");
  CheckInputRank(c, 1, 0, "limit");
  CheckInputRank(c, 2, 0, "delta");
  const Tensor *start = c.value(0), *limit = c.value(1), *delta = c.value(2);
  if (!start || !limit || !delta) return PartialShape(Dims{kUnknownDim});
  int64_t size = 0;
  VisitNumeric(c.dtypes[0], "Range", [&](auto tag) {
    using T = typename decltype(tag)::type;
    size = RangeSize<T>(c.op, *start->data<T>(), *limit->data<T>(), *delta->data<T>());
  });
  return PartialShape(Dims{size});
}

template <typename T>
void WriteRange(T start, T delta, T* out, int64_t n) {
  if constexpr (std::is_integral_v<T>) {
    // Wrapping arithmetic gives the exact result even where i * delta alone would overflow.
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<T>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  }
}

OpDef MakeRange() {
  OpDef op;
  op.name = "Range";
  op.inputs = {{"start", false, "Tidx", kNumericTypes},
               {"limit", false, "Tidx", kNumericTypes},
               {"delta", false, "Tidx", kNumericTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{RangeShape(c)}; };
  op.kernel = [](KernelContext& ctx) {
    Tensor& out = ctx.allocate_output(0);
    VisitNumeric(out.dtype(), "Range", [&](auto tag) {
      using T = typename decltype(tag)::type;
      WriteRange<T>(*ctx.input(0).data<T>(), *ctx.input(2).data<T>(), out.data<T>(), out.num_elements());
    });
  };
  op.doc = "The sequence start, start + delta, ... up to but not including limit.";
  return op;
}

// ---- ZerosLike, OnesLike ----------------------------------------------------

template <int kValue>
OpDef MakeConstantLike(const char* name, std::vector<DType> allowed) {
  OpDef op;
  op.name = name;
  op.inputs = {{"x", false, "T", std::move(allowed)}};
  op.outputs = {"y"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = [name](KernelContext& ctx) {
    Tensor& out = ctx.allocate_output(0);
    VisitAll(out.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, std::string>) {
        std::fill_n(out.data<T>(), out.num_elements(), std::string());  // strings: only zeros ("")
      } else {
        std::fill_n(out.data<T>(), out.num_elements(), static_cast<T>(kValue));
      }
    });
  };
  op.doc = kValue ? "A tensor of ones with the shape and dtype of x." : "A tensor of zeros with the shape and dtype of x.";
  return op;
}

OpRegistrar fill_op(WithNarrowTypes(MakeFill(), kNarrowTypes));
OpRegistrar range_op(MakeRange());
OpRegistrar zeros_like_op(WithNarrowTypes(MakeConstantLike<0>("ZerosLike", kAllTypes), kNarrowTypes));
OpRegistrar ones_like_op(WithNarrowTypes(MakeConstantLike<1>("OnesLike", kNumericBoolTypes), kNarrowTypes));

}  // namespace
}  // namespace treadle
