// The narrow dtypes (float16, bfloat16, int8, uint8) in kernels. Kernels are
// written for the wide types; an op that makes sense on narrow values opts in
// with WithNarrowTypes, which widens its narrow inputs (16-bit floats to
// float32, 8-bit integers to int32), runs the wide kernel and rounds each
// narrow output once (floats to nearest even; integers wrap, as TensorFlow's
// 8-bit arithmetic does). Ops that do not opt in refuse narrow dtypes when a
// call is checked, through their allowed-dtype lists.
#pragma once

#include <vector>

#include "ops/registry.h"

namespace treadle {

inline const std::vector<DType> kHalfTypes = {DType::kFloat16, DType::kBFloat16};
inline const std::vector<DType> kByteIntTypes = {DType::kInt8, DType::kUInt8};
inline const std::vector<DType> kNarrowTypes = {DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kUInt8};

// The dtype a narrow dtype computes in (float32 or int32); others unchanged.
DType WideDType(DType t);
// `t` converted to WideDType(t.dtype()) (t itself when it is not narrow).
Tensor WidenTensor(const Tensor& t);
// How wide results become narrow. kWrap: int32 wraps around (arithmetic, as
// TensorFlow's 8-bit ops do) and float32 rounds (overflowing to infinity).
// kSaturate, for max and min, whose results are inputs except for an empty
// reduction's identity (the wide type's lowest or highest value): that becomes
// the narrow type's lowest or highest (finite floats are clamped first).
enum class Narrowing { kWrap, kSaturate };

// `wide` converted to dtype `narrow` (float32 -> 16-bit float, int32 -> 8-bit int).
Tensor NarrowTensor(const Tensor& wide, DType narrow, Narrowing mode = Narrowing::kWrap);
// Elementwise conversions between a 16-bit float's bits and float32.
void HalfToF32(DType half, const uint16_t* src, float* dst, int64_t n);
void F32ToHalf(DType half, const float* src, uint16_t* dst, int64_t n);
// float64 to a 16-bit float, rounded once (tensor/half.h).
void F64ToHalf(DType half, const double* src, uint16_t* dst, int64_t n);
// dst[i] += src[i] for 16-bit floats: each sum computed in float32, rounded once.
void AddHalfInto(DType half, const uint16_t* src, uint16_t* dst, int64_t n);

// `op` accepting `extra` narrow dtypes wherever it accepts their wide dtype
// (float32 for 16-bit floats, int32 for 8-bit integers), with its kernel run
// in the wide dtype as described above.
OpDef WithNarrowTypes(OpDef op, const std::vector<DType>& extra, Narrowing mode = Narrowing::kWrap);

// Whether a call has a narrow input or output dtype (RunKernel's choice of
// OpDef::narrow_kernel).
// Inline: RunKernel asks it on every call of an op that has a narrow kernel.
inline bool IsNarrowDType(DType t) { return IsHalfFloat(t) || IsByteInt(t); }
inline bool IsNarrowCall(const KernelContext& ctx) {
  for (DType t : ctx.out_dtypes) {
    if (IsNarrowDType(t)) return true;
  }
  for (const Tensor& t : ctx.inputs) {
    if (IsNarrowDType(t.dtype())) return true;
  }
  return false;
}

}  // namespace treadle
