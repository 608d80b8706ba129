// Conversions between the 16-bit floats (float16, bfloat16; as their bit
// patterns) and float32, vectorized with Highway at every SIMD level, for the
// narrow dtypes that compute in float32 (ops/narrow_types.h). Each rounds to
// nearest even as the scalar rules of tensor/half.h do, with the same NaN,
// infinity and subnormal results (tests/ops/test_narrow_dtypes.py checks every
// level against NumPy and ml_dtypes).
#pragma once

#include <cstdint>

namespace treadle::simd {

void F16ToF32(const uint16_t* x, float* y, int64_t n);
void F32ToF16(const float* x, uint16_t* y, int64_t n);
void BF16ToF32(const uint16_t* x, float* y, int64_t n);
void F32ToBF16(const float* x, uint16_t* y, int64_t n);

}  // namespace treadle::simd
