#include "ops/narrow_types.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/kernels/simd/half_kernels.h"
#include "tensor/half.h"

namespace treadle {

DType WideDType(DType t) {
  if (IsHalfFloat(t)) return DType::kFloat32;
  if (IsByteInt(t)) return DType::kInt32;
  return t;
}

void HalfToF32(DType half, const uint16_t* src, float* dst, int64_t n) {
  if (half == DType::kBFloat16) simd::BF16ToF32(src, dst, n);
  else simd::F16ToF32(src, dst, n);
}

void F32ToHalf(DType half, const float* src, uint16_t* dst, int64_t n) {
  if (half == DType::kBFloat16) simd::F32ToBF16(src, dst, n);
  else simd::F32ToF16(src, dst, n);
}

void F64ToHalf(DType half, const double* src, uint16_t* dst, int64_t n) {
  if (half == DType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = F64ToBF16(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = F64ToF16(src[i]);
  }
}

void AddHalfInto(DType half, const uint16_t* src, uint16_t* dst, int64_t n) {
  if (half == DType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = F32ToBF16(BF16ToF32(dst[i]) + BF16ToF32(src[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = F32ToF16(F16ToF32(dst[i]) + F16ToF32(src[i]));
  }
}

Tensor WidenTensor(const Tensor& t) {
  const DType wide = WideDType(t.dtype());
  if (wide == t.dtype()) return t;
  Tensor out(wide, t.shape());
  const int64_t n = t.num_elements();
  if (IsHalfFloat(t.dtype())) {
    HalfToF32(t.dtype(), t.data<uint16_t>(), out.data<float>(), n);
  } else if (t.dtype() == DType::kInt8) {
    std::copy(t.data<int8_t>(), t.data<int8_t>() + n, out.data<int32_t>());
  } else {
    std::copy(t.data<uint8_t>(), t.data<uint8_t>() + n, out.data<int32_t>());
  }
  return out;
}

Tensor NarrowTensor(const Tensor& wide, DType narrow, Narrowing mode) {
  if (wide.dtype() == narrow) return wide;
  if (wide.dtype() != WideDType(narrow)) {
    throw Error(Code::kInternal, StrCat("Narrow: cannot narrow ", DTypeName(wide.dtype()), " to ", DTypeName(narrow)));
  }
  Tensor out(narrow, wide.shape());
  const int64_t n = wide.num_elements();
  if (IsHalfFloat(narrow) && mode == Narrowing::kSaturate) {
    const float top = narrow == DType::kFloat16 ? 65504.0f : BF16ToF32(0x7f7f);  // the largest finite value
    std::vector<float> clamped(wide.data<float>(), wide.data<float>() + n);
    for (float& v : clamped) {
      if (std::isfinite(v)) v = std::clamp(v, -top, top);
    }
    F32ToHalf(narrow, clamped.data(), out.data<uint16_t>(), n);
  } else if (IsHalfFloat(narrow)) {
    F32ToHalf(narrow, wide.data<float>(), out.data<uint16_t>(), n);
  } else if (mode == Narrowing::kSaturate) {
    const int32_t lo = narrow == DType::kInt8 ? -128 : 0, hi = narrow == DType::kInt8 ? 127 : 255;
    const int32_t* src = wide.data<int32_t>();
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = static_cast<uint8_t>(static_cast<uint32_t>(std::clamp(src[i], lo, hi)) & 0xffu);
    }
  } else {
    // Two's complement wrap-around, as TensorFlow's int8/uint8 arithmetic.
    const int32_t* src = wide.data<int32_t>();
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(static_cast<uint32_t>(src[i]) & 0xffu);
  }
  return out;
}

namespace {

// Adds each of `extra` to an allowed list that holds its wide dtype.
void ExtendAllowed(std::vector<DType>& allowed, const std::vector<DType>& extra) {
  if (allowed.empty()) return;  // "any" lists are the op's own business
  std::vector<DType> add;
  for (DType t : extra) {
    const bool has_wide = std::find(allowed.begin(), allowed.end(), WideDType(t)) != allowed.end();
    const bool has = std::find(allowed.begin(), allowed.end(), t) != allowed.end();
    if (has_wide && !has) add.push_back(t);
  }
  allowed.insert(allowed.end(), add.begin(), add.end());
}

}  // namespace

OpDef WithNarrowTypes(OpDef op, const std::vector<DType>& extra, Narrowing mode) {
  // Only data arguments, which take floats or bools; not axes, shapes or
  // indices, which take only integers.
  for (ArgDef& arg : op.inputs) {
    const bool data = std::any_of(arg.allowed.begin(), arg.allowed.end(),
                                  [](DType t) { return IsFloating(t) || t == DType::kBool; });
    if (data) ExtendAllowed(arg.allowed, extra);
  }
  // op.kernel stays the wide kernel; this one runs a narrow call through it.
  op.narrow_kernel = [wide_kernel = op.kernel, mode](KernelContext& ctx) {
    std::vector<Tensor> inputs;
    inputs.reserve(ctx.inputs.size());
    for (const Tensor& t : ctx.inputs) inputs.push_back(WidenTensor(t));
    std::vector<DType> wide_dtypes;
    for (DType t : ctx.out_dtypes) wide_dtypes.push_back(WideDType(t));
    KernelContext wide(ctx.op, inputs, ctx.attrs, wide_dtypes, ctx.out_shapes, ctx.functions);
    wide_kernel(wide);
    for (size_t i = 0; i < wide.outputs.size(); ++i) {
      ctx.set_output(static_cast<int>(i), NarrowTensor(wide.outputs[i], ctx.out_dtypes[i], mode));
    }
  };
  return op;
}

}  // namespace treadle
