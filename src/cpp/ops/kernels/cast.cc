// Cast between numeric and bool dtypes (TensorFlow's Cast: floats to ints
// truncate toward zero, anything nonzero is true).
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/dispatch.h"
#include "ops/kernels/simd/vec_kernels.h"
#include "ops/op_helpers.h"

namespace treadle {
namespace {

template <typename From, typename To>
To CastOne(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Out-of-range and NaN float->int is undefined in C++; saturate instead.
    if (std::isnan(v)) return 0;
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// The casts with SIMD kernels; false for the others.
bool SimdCast(const Tensor& x, Tensor& out) {
  const DType from = x.dtype(), to = out.dtype();
  const int64_t n = x.num_elements();
  using DT = DType;
  if (from == DT::kFloat32 && to == DT::kFloat64) simd::CastF32ToF64(x.data<float>(), out.data<double>(), n);
  else if (from == DT::kFloat64 && to == DT::kFloat32) simd::CastF64ToF32(x.data<double>(), out.data<float>(), n);
  else if (from == DT::kInt32 && to == DT::kFloat32) simd::CastI32ToF32(x.data<int32_t>(), out.data<float>(), n);
  else if (from == DT::kFloat32 && to == DT::kInt32) simd::CastF32ToI32(x.data<float>(), out.data<int32_t>(), n);
  else if (from == DT::kBool && to == DT::kFloat32) simd::CastBoolToF32(x.data<bool>(), out.data<float>(), n);
  else if (from == DT::kFloat32 && to == DT::kBool) simd::CastF32ToBool(x.data<float>(), out.data<bool>(), n);
  else return false;
  return true;
}

OpDef MakeCast() {
  OpDef op;
  op.name = "Cast";
  op.inputs = {{"x", false, "SrcT", kNumericBoolTypes}};
  op.outputs = {"y"};
  op.attrs = {{"DstT", AttrType::kType, std::nullopt}};
  op.dtype_fn = [](const InferContext& c) {
    DType dst = c.attrs.GetType("DstT");
    if (dst == DType::kString) ThrowTypeError("Cast: casting to string is not supported");
    return std::vector<DType>{dst};
  };
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = [](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& out = ctx.allocate_output(0);
    if (SimdCast(x, out)) return;
    VisitNumericBool(x.dtype(), "Cast", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      VisitNumericBool(out.dtype(), "Cast", [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        const From* src = x.data<From>();
        To* dst = out.data<To>();
        for (int64_t i = 0; i < x.num_elements(); ++i) dst[i] = CastOne<From, To>(src[i]);
      });
    });
  };
  op.doc = "Casts x to dtype DstT.";
  return op;
}

OpRegistrar cast_op(MakeCast());

}  // namespace
}  // namespace treadle
