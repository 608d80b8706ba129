// Vectorizable float32 exp, tanh and sigmoid over arrays. std::exp/std::tanh
// are scalar calls (~20 ns each); these loops are plain arithmetic and
// selects that the compiler turns into SIMD code, built for AVX-512, AVX2 and
// the x86-64 baseline and picked at run time. Accuracy is within a few ulp of
// the correctly rounded result; NaN propagates, and +-inf saturate.
#pragma once

#include <cstdint>

namespace treadle::fastmath {

void ExpF32(const float* x, float* y, int64_t n);
void TanhF32(const float* x, float* y, int64_t n);
void SigmoidF32(const float* x, float* y, int64_t n);

}  // namespace treadle::fastmath
