#include "ops/kernels/fast_math.h"

#include <cstring>
#include <limits>

namespace treadle::fastmath {
namespace {

// exp(x) by range reduction (x = n ln2 + r, |r| <= ln2/2), a degree-6
// polynomial for exp(r) (Cephes' expf coefficients) and 2^n built in the
// exponent bits. Inputs beyond float's range are fixed up by the callers'
// selects, so here x is clamped to keep 2^n a normal number.
inline float ExpCore(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  x = x < -104.0f ? -104.0f : x;
  x = x > 89.0f ? 89.0f : x;
  float n = (x * kLog2e + kRound) - kRound;
  float r = x - n * kLn2Hi - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n as two normal factors, so results near overflow and in the
  // subnormal range come out right (n spans about -150..128).
  int32_t ni = static_cast<int32_t>(n);
  int32_t half = ni >> 1;
  int32_t bits1 = (half + 127) << 23;
  int32_t bits2 = (ni - half + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &bits1, sizeof s1);
  std::memcpy(&s2, &bits2, sizeof s2);
  return p * s1 * s2;
}

inline float Exp(float x) {
  float y = ExpCore(x);
  y = x < -104.0f ? 0.0f : y;
  y = x > 89.0f ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}

inline float Tanh(float x) {
  float ax = x < 0 ? -x : x;
  // Small |x|: an odd polynomial (Cephes' tanhf), accurate where 1 - 2/(e+1) cancels.
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = p * z * x + x;
  // Larger |x|: 1 - 2 / (exp(2|x|) + 1), saturating to 1.
  float e = ExpCore(2.0f * (ax > 20.0f ? 20.0f : ax));
  float large = 1.0f - 2.0f / (e + 1.0f);
  large = x < 0 ? -large : large;
  float y = ax < 0.625f ? small : large;
  return x != x ? x : y;
}

inline float Sigmoid(float x) {
  // exp(-|x|) never overflows; the two forms keep precision on both sides.
  float ax = x < 0 ? -x : x;
  float e = ExpCore(-ax);
  e = ax > 104.0f ? 0.0f : e;
  float pos = 1.0f / (1.0f + e);
  float y = x < 0 ? e * pos : pos;
  return x != x ? x : y;
}

}  // namespace

#define TREADLE_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

TREADLE_SIMD_CLONES void ExpF32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Exp(x[i]);
}

TREADLE_SIMD_CLONES void TanhF32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Tanh(x[i]);
}

TREADLE_SIMD_CLONES void SigmoidF32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Sigmoid(x[i]);
}

}  // namespace treadle::fastmath
