// The 16-bit floats float16 (IEEE binary16) and bfloat16, stored as their bit
// patterns. treadle computes with them in float32: these are the one pair of
// conversions every kernel uses, rounding to nearest, ties to even, as NumPy
// and ml_dtypes do.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace treadle {

inline uint32_t F32Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float F32FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bfloat16 is the upper half of a float32.
inline float BF16ToF32(uint16_t h) { return F32FromBits(static_cast<uint32_t>(h) << 16); }
inline uint16_t F32ToBF16(float f) {
  uint32_t u = F32Bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays a quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even; overflow carries into infinity
  return static_cast<uint16_t>(u >> 16);
}

inline float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return F32FromBits(sign | 0x7f800000u | (man << 13));  // inf, NaN
  if (exp != 0) return F32FromBits(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in float32.
  const float v = static_cast<float>(man) * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

inline uint16_t F32ToF16(float f) {
  const uint32_t u = F32Bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((a >> 13) & 0x3ffu);  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (a < 0x38800000u) {
    // Below the smallest normal float16 (2^-14): a subnormal or zero. Adding
    // 0.5 makes the float32 adder round the value to a multiple of 2^-24 (ties
    // to even), which then sits in the low mantissa bits.
    const float r = F32FromBits(a) + 0.5f;
    return sign | static_cast<uint16_t>(F32Bits(r) - 0x3f000000u);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits.
  uint32_t v = a - 0x38000000u;  // (127 - 15) << 23
  v += 0xfffu + ((v >> 13) & 1u);
  return sign | static_cast<uint16_t>(v >> 13);
}

// A double rounded to float32 "to odd" (truncated, with the last bit set when
// inexact): rounding that float to a 16-bit float then gives the double's own
// correctly rounded 16-bit value, with no double-rounding error, because
// float32 keeps more than two bits beyond either 16-bit format.
inline float F64ToF32RoundToOdd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return F32FromBits(F32Bits(f) | 1u);
}

inline uint16_t F64ToF16(double d) { return F32ToF16(F64ToF32RoundToOdd(d)); }
inline uint16_t F64ToBF16(double d) { return F32ToBF16(F64ToF32RoundToOdd(d)); }

}  // namespace treadle
