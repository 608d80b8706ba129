// Cast between numeric and bool dtypes (TensorFlow's Cast: floats to ints
// truncate toward zero, anything nonzero is true).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/dispatch.h"
#include "ops/narrow_types.h"
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

// The numeric and bool dtypes with a C++ type of their own (all but the
// 16-bit floats, which Cast goes through float32 for).
template <typename Fn> void VisitCastable(DType t, Fn&& fn) {
  if (t == DType::kInt8) return fn(Tag<int8_t>{});
  if (t == DType::kUInt8) return fn(Tag<uint8_t>{});
  VisitNumericBool(t, "Cast", fn);
}

void CastPlain(const Tensor& x, Tensor& out) {
  if (SimdCast(x, out)) return;
  VisitCastable(x.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    VisitCastable(out.dtype(), [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* src = x.data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < x.num_elements(); ++i) dst[i] = CastOne<From, To>(src[i]);
    });
  });
}

// Casts to a 16-bit float round once: from float32 directly, from the other
// types through float64 (exact for all but int64 beyond 2^53), whose
// conversion rounds to odd first so that the result is correctly rounded.
void CastToHalf(const Tensor& x, Tensor& out) {
  uint16_t* dst = out.data<uint16_t>();
  const int64_t n = x.num_elements();
  if (IsHalfFloat(x.dtype())) {
    if (x.dtype() == out.dtype()) {
      std::copy(x.data<uint16_t>(), x.data<uint16_t>() + n, dst);
    } else {
      Tensor f32 = WidenTensor(x);  // exact
      F32ToHalf(out.dtype(), f32.data<float>(), dst, n);
    }
    return;
  }
  if (x.dtype() == DType::kFloat32) return F32ToHalf(out.dtype(), x.data<float>(), dst, n);
  Tensor f64 = x;
  if (x.dtype() != DType::kFloat64) {
    f64 = Tensor(DType::kFloat64, x.shape());
    CastPlain(x, f64);
  }
  F64ToHalf(out.dtype(), f64.data<double>(), dst, n);
}

// Casts from a 16-bit float: exact to float32, then as from float32.
void CastFromHalf(const Tensor& x, Tensor& out) {
  Tensor f32 = WidenTensor(x);
  if (out.dtype() == DType::kFloat32) {
    std::copy(f32.data<float>(), f32.data<float>() + f32.num_elements(), out.data<float>());
  } else {
    CastPlain(f32, out);
  }
}

OpDef MakeCast() {
  OpDef op;
  op.name = "Cast";
  std::vector<DType> allowed = kNumericBoolTypes;
  allowed.insert(allowed.end(), kHalfTypes.begin(), kHalfTypes.end());
  allowed.insert(allowed.end(), kByteIntTypes.begin(), kByteIntTypes.end());
  op.inputs = {{"x", false, "SrcT", allowed}};
  op.outputs = {"y"};
  op.attrs = {{"DstT", AttrType::kType, std::nullopt}};
  op.dtype_fn = [](const InferContext& c) {
    DType dst = c.attrs.GetType("DstT");
    if (dst == DType::kString) ThrowTypeError("Cast: casting to string is not supported");
    if (IsHandle(dst)) ThrowTypeError("Cast: casting to ", DTypeName(dst), " is not supported");
    return std::vector<DType>{dst};
  };
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = [](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& out = ctx.allocate_output(0);
    if (IsHalfFloat(out.dtype())) return CastToHalf(x, out);
    if (IsHalfFloat(x.dtype())) return CastFromHalf(x, out);
    CastPlain(x, out);
  };
  op.doc = "Casts x to dtype DstT.";
  return op;
}

OpRegistrar cast_op(MakeCast());

}  // namespace
}  // namespace treadle
