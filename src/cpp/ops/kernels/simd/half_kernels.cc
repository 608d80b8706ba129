// Highway implementations of half_kernels.h, compiled once per SIMD target
// (hwy/foreach_target.h re-includes this file) and dispatched as in
// vec_kernels.cc. Tails go through the scalar rules of tensor/half.h, which
// round the same way.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/kernels/simd/half_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cstdint>

#include "hwy/highway.h"
#include "ops/kernels/simd/half_kernels.h"
#include "tensor/half.h"

HWY_BEFORE_NAMESPACE();
namespace treadle::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// float16 <-> float32 in hardware where the target has it (x86 F16C from
// AVX2 on, ARM); elsewhere Highway's emulation is not relied on for rounding
// and the scalar rule runs.
#if HWY_TARGET == HWY_SCALAR || (HWY_ARCH_X86 && HWY_TARGET > HWY_AVX2) || HWY_TARGET == HWY_EMU128
#define TREADLE_NATIVE_F16 0
#else
#define TREADLE_NATIVE_F16 1
#endif

void F16ToF32(const uint16_t* x, float* y, int64_t n) {
  size_t i = 0;
  const size_t un = static_cast<size_t>(n);
#if TREADLE_NATIVE_F16
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const size_t lanes = hn::Lanes(df);
  const auto* h = reinterpret_cast<const hwy::float16_t*>(x);
  for (; i + lanes <= un; i += lanes) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, h + i)), df, y + i);
#endif
  for (; i < un; ++i) y[i] = treadle::F16ToF32(x[i]);
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  size_t i = 0;
  const size_t un = static_cast<size_t>(n);
#if TREADLE_NATIVE_F16
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const size_t lanes = hn::Lanes(df);
  auto* h = reinterpret_cast<hwy::float16_t*>(y);
  for (; i + lanes <= un; i += lanes) hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, x + i)), dh, h + i);
#endif
  for (; i < un; ++i) y[i] = treadle::F32ToF16(x[i]);
}

// bfloat16 is the upper half of a float32: integer shifts, on every target.
void BF16ToF32(const uint16_t* x, float* y, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const size_t lanes = hn::Lanes(df), un = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + lanes <= un; i += lanes) {
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, x + i)))), df, y + i);
  }
  for (; i < un; ++i) y[i] = treadle::BF16ToF32(x[i]);
}

// Round to nearest even by adding 0x7fff plus the kept part's lowest bit;
// NaN keeps its sign and upper payload and becomes quiet (| 0x40).
void F32ToBF16(const float* x, uint16_t* y, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const size_t lanes = hn::Lanes(df), un = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + lanes <= un; i += lanes) {
    const auto v = hn::LoadU(df, x + i);
    const auto u = hn::BitCast(du, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(u, hn::Add(lsb, hn::Set(du, 0x7fffu))));
    const auto nan = hn::Or(hn::ShiftRight<16>(u), hn::Set(du, 0x40u));
    const auto bits = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, rounded);
    // Every lane is below 2^16, so the saturating demotion is exact.
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, bits)), du16, y + i);
  }
  for (; i < un; ++i) y[i] = treadle::F32ToBF16(x[i]);
}

#undef TREADLE_NATIVE_F16

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace treadle::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace treadle::simd {

HWY_EXPORT(F16ToF32);
HWY_EXPORT(F32ToF16);
HWY_EXPORT(BF16ToF32);
HWY_EXPORT(F32ToBF16);

void F16ToF32(const uint16_t* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(F16ToF32)(x, y, n); }
void F32ToF16(const float* x, uint16_t* y, int64_t n) { HWY_DYNAMIC_DISPATCH(F32ToF16)(x, y, n); }
void BF16ToF32(const uint16_t* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(BF16ToF32)(x, y, n); }
void F32ToBF16(const float* x, uint16_t* y, int64_t n) { HWY_DYNAMIC_DISPATCH(F32ToBF16)(x, y, n); }

}  // namespace treadle::simd
#endif  // HWY_ONCE
