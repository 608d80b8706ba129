// Highway implementations of vec_kernels.h. This file is compiled once per
// SIMD target (hwy/foreach_target.h re-includes it); the functions at the end
// (HWY_ONCE) dispatch to the best target that isa.cc allows.
//
// The one-vector math (exp, log, tanh, sigmoid, the binary ops) is in
// vec_math-inl.h, which the fused elementwise evaluator shares.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/kernels/simd/vec_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
#include "ops/kernels/simd/vec_kernels.h"
#include "ops/kernels/simd/vec_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace treadle::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Room for one vector of any target (tails go through such a buffer).
template <typename T> constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(T);

// ---------------------------------------------------------------- array loops

// Applies `f(d, i, count)` to whole vectors and then to the tail. `f` loads
// and stores by itself; for the tail it gets count < Lanes(d) and must go
// through a buffer (SafeCopyN), which keeps every access inside the arrays.
template <typename T, class F>
HWY_INLINE void ForEachVector(size_t n, F f) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) f(d, i, lanes);
  if (i < n) f(d, i, n - i);
}

template <Unary kOp, typename T>
void UnaryLoop(const T* x, T* y, int64_t n) {
  ForEachVector<T>(static_cast<size_t>(n), [&](auto d, size_t i, size_t count) {
    if (count == hn::Lanes(d)) {
      hn::StoreU(UnaryVec<kOp>(d, hn::LoadU(d, x + i)), d, y + i);
      return;
    }
    HWY_ALIGN T buf[kMaxLanes<T>] = {};
    hn::SafeCopyN(count, d, x + i, buf);
    hn::Store(UnaryVec<kOp>(d, hn::Load(d, buf)), d, buf);
    hn::SafeCopyN(count, d, buf, y + i);
  });
}

template <typename T>
void UnaryT(Unary op, const T* x, T* y, int64_t n) {
  switch (op) {
    case Unary::kExp: return UnaryLoop<Unary::kExp>(x, y, n);
    case Unary::kLog: return UnaryLoop<Unary::kLog>(x, y, n);
    case Unary::kTanh: return UnaryLoop<Unary::kTanh>(x, y, n);
    case Unary::kSigmoid: return UnaryLoop<Unary::kSigmoid>(x, y, n);
  }
}

template <typename T>
HWY_INLINE auto LoadArg(const T* p, int64_t step, size_t i, size_t count) {
  const hn::ScalableTag<T> d;
  if (step == 0) return hn::Set(d, p[0]);
  if (count == hn::Lanes(d)) return hn::LoadU(d, p + i);
  HWY_ALIGN T buf[kMaxLanes<T>] = {};
  hn::SafeCopyN(count, d, p + i, buf);
  return hn::Load(d, buf);
}

// One loop per (op, step of a, step of b): the broadcast operand is loaded
// once, outside the loop.
template <Binary kOp, typename T>
void BinaryLoop(const T* a, int64_t a_step, const T* b, int64_t b_step, T* out, int64_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d), un = static_cast<size_t>(n);
  size_t i = 0;
  if (a_step == 1 && b_step == 1) {
    for (; i + lanes <= un; i += lanes) hn::StoreU(BinaryVec<kOp>(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  } else if (a_step == 1) {
    const auto vb = hn::Set(d, b[0]);
    for (; i + lanes <= un; i += lanes) hn::StoreU(BinaryVec<kOp>(d, hn::LoadU(d, a + i), vb), d, out + i);
  } else if (b_step == 1) {
    const auto va = hn::Set(d, a[0]);
    for (; i + lanes <= un; i += lanes) hn::StoreU(BinaryVec<kOp>(d, va, hn::LoadU(d, b + i)), d, out + i);
  } else {
    const auto r = BinaryVec<kOp>(d, hn::Set(d, a[0]), hn::Set(d, b[0]));
    for (; i + lanes <= un; i += lanes) hn::StoreU(r, d, out + i);
  }
  if (i < un) {
    const size_t count = un - i;
    const auto r = BinaryVec<kOp>(d, LoadArg(a, a_step, i, count), LoadArg(b, b_step, i, count));
    HWY_ALIGN T buf[kMaxLanes<T>];
    hn::Store(r, d, buf);
    hn::SafeCopyN(count, d, buf, out + i);
  }
}

template <typename T>
void BinaryT(Binary op, const T* a, int64_t a_step, const T* b, int64_t b_step, T* out, int64_t n) {
  switch (op) {
    case Binary::kAdd: BinaryLoop<Binary::kAdd>(a, a_step, b, b_step, out, n); break;
    case Binary::kSub: BinaryLoop<Binary::kSub>(a, a_step, b, b_step, out, n); break;
    case Binary::kMul: BinaryLoop<Binary::kMul>(a, a_step, b, b_step, out, n); break;
    case Binary::kDiv: BinaryLoop<Binary::kDiv>(a, a_step, b, b_step, out, n); break;
    case Binary::kMax: BinaryLoop<Binary::kMax>(a, a_step, b, b_step, out, n); break;
    case Binary::kMin: BinaryLoop<Binary::kMin>(a, a_step, b, b_step, out, n); break;
    case Binary::kSigmoidGrad: BinaryLoop<Binary::kSigmoidGrad>(a, a_step, b, b_step, out, n); break;
    case Binary::kTanhGrad: BinaryLoop<Binary::kTanhGrad>(a, a_step, b, b_step, out, n); break;
  }
}

void UnaryF32(Unary op, const float* x, float* y, int64_t n) { UnaryT(op, x, y, n); }
void UnaryF64(Unary op, const double* x, double* y, int64_t n) { UnaryT(op, x, y, n); }
void BinaryF32(Binary op, const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  BinaryT(op, a, sa, b, sb, out, n);
}
void BinaryF64(Binary op, const double* a, int64_t sa, const double* b, int64_t sb, double* out, int64_t n) {
  BinaryT(op, a, sa, b, sb, out, n);
}

// ---------------------------------------------------------------- reductions

// Max or min of n values with NaN winning; the tail is padded with the
// identity (-inf for max, +inf for min).
template <bool kMax>
float ExtremumF32(const float* x, int64_t n) {
  const hn::ScalableTag<float> d;
  const float identity = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  auto acc = hn::Set(d, identity);
  auto any_nan = hn::FirstN(d, 0);  // no lane yet
  ForEachVector<float>(static_cast<size_t>(n), [&](auto dd, size_t i, size_t count) {
    auto v = hn::Set(dd, identity);
    if (count == hn::Lanes(dd)) {
      v = hn::LoadU(dd, x + i);
    } else {
      HWY_ALIGN float buf[kMaxLanes<float>];
      hn::Store(v, dd, buf);
      hn::SafeCopyN(count, dd, x + i, buf);
      v = hn::Load(dd, buf);
    }
    any_nan = hn::Or(any_nan, hn::IsNaN(v));
    acc = kMax ? hn::Max(acc, v) : hn::Min(acc, v);
  });
  if (!hn::AllFalse(d, any_nan)) return std::numeric_limits<float>::quiet_NaN();
  return hn::GetLane(kMax ? hn::MaxOfLanes(d, acc) : hn::MinOfLanes(d, acc));
}

float MaxF32(const float* x, int64_t n) { return ExtremumF32<true>(x, n); }
float MinF32(const float* x, int64_t n) { return ExtremumF32<false>(x, n); }

// Loads half a float vector's worth of lanes as doubles.
double SumF32(const float* x, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
  size_t i = 0;
  const size_t un = static_cast<size_t>(n);
  for (; i + 2 * lanes <= un; i += 2 * lanes) {
    acc0 = hn::Add(acc0, hn::PromoteTo(dd, hn::LoadU(df, x + i)));
    acc1 = hn::Add(acc1, hn::PromoteTo(dd, hn::LoadU(df, x + i + lanes)));
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
  for (; i < un; ++i) sum += static_cast<double>(x[i]);
  return sum;
}

void SumRowsIntoF32(double* acc, const float* rows, int64_t num_rows, int64_t n) {
  // Up to kBlock rows are added in float (as NumPy's pairwise sums do), then
  // the partial sum is added to the double accumulator: 1/kBlock of the
  // double traffic of adding every row in double.
  constexpr int64_t kBlock = 8;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd), un = static_cast<size_t>(n);
  for (int64_t k0 = 0; k0 < num_rows; k0 += kBlock) {
    const int64_t k1 = std::min(num_rows, k0 + kBlock);
    size_t j = 0;
    for (; j + lanes <= un; j += lanes) {
      auto partial = hn::LoadU(df, rows + k0 * n + j);
      for (int64_t k = k0 + 1; k < k1; ++k) partial = hn::Add(partial, hn::LoadU(df, rows + k * n + j));
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j), hn::PromoteTo(dd, partial)), dd, acc + j);
    }
    for (; j < un; ++j) {
      float partial = rows[k0 * n + j];
      for (int64_t k = k0 + 1; k < k1; ++k) partial += rows[k * n + j];
      acc[j] += static_cast<double>(partial);
    }
  }
}

void AccumulateMaxF32(float* acc, const float* row, int64_t n) {
  BinaryLoop<Binary::kMax>(acc, 1, row, 1, acc, n);
}

void AddRowsF32(float* dst, const int32_t* index, const float* src, int64_t count, int64_t row_elements,
                int64_t e0, int64_t e1) {
  for (int64_t r = 0; r < count; ++r) {
    float* d = dst + (index ? index[r] : r) * row_elements + e0;
    BinaryLoop<Binary::kAdd>(d, 1, src + r * row_elements + e0, 1, d, e1 - e0);
  }
}
void AccumulateMinF32(float* acc, const float* row, int64_t n) {
  BinaryLoop<Binary::kMin>(acc, 1, row, 1, acc, n);
}

// ---------------------------------------------------------------- softmax

void SoftmaxRowsF32(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float max = ExtremumF32<true>(xr, n);
    if (std::isinf(max)) max = 0;  // all -inf (or an inf): leave the arithmetic to say nan/0
    // y = exp(x - max), then the sum in double (long rows stay accurate).
    BinaryLoop<Binary::kSub>(xr, 1, &max, 0, yr, n);
    if (log) {
      // (x - max) - log(sum of exp(x - max)): the exps go through y, which
      // then gets the shifted values again.
      UnaryLoop<Unary::kExp>(yr, yr, n);
      const float log_sum = static_cast<float>(std::log(SumF32(yr, n)));
      BinaryLoop<Binary::kSub>(xr, 1, &max, 0, yr, n);
      BinaryLoop<Binary::kSub>(yr, 1, &log_sum, 0, yr, n);
    } else {
      UnaryLoop<Unary::kExp>(yr, yr, n);
      const float scale = static_cast<float>(1.0 / SumF32(yr, n));
      BinaryLoop<Binary::kMul>(yr, 1, &scale, 0, yr, n);
    }
  }
}

// ---------------------------------------------------------------- casts

void CastF32ToF64(const float* x, double* y, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd), un = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + lanes <= un; i += lanes) hn::StoreU(hn::PromoteTo(dd, hn::LoadU(df, x + i)), dd, y + i);
  for (; i < un; ++i) y[i] = static_cast<double>(x[i]);
}

void CastF64ToF32(const double* x, float* y, int64_t n) {
#if HWY_TARGET == HWY_SCALAR
  // Highway's scalar DemoteTo saturates at +-FLT_MAX; C++'s conversion
  // overflows to +-inf, as the vector targets and TensorFlow do.
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
  return;
#endif
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd), un = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + lanes <= un; i += lanes) hn::StoreU(hn::DemoteTo(df, hn::LoadU(dd, x + i)), df, y + i);
  for (; i < un; ++i) y[i] = static_cast<float>(x[i]);
}

void CastI32ToF32(const int32_t* x, float* y, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t lanes = hn::Lanes(df), un = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + lanes <= un; i += lanes) hn::StoreU(hn::ConvertTo(df, hn::LoadU(di, x + i)), df, y + i);
  for (; i < un; ++i) y[i] = static_cast<float>(x[i]);
}

// TensorFlow's float -> int32: truncation, saturation at the int32 range,
// NaN -> 0. Highway's own overflow handling differs between targets, so NaN
// and the out-of-range lanes convert 0 and the saturated values go in after.
template <class DF>
HWY_INLINE auto SaturatingF32ToI32(DF df, hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  const auto too_big = hn::Ge(v, hn::Set(df, 2147483648.0f));
  const auto too_small = hn::Le(v, hn::Set(df, -2147483648.0f));
  v = hn::IfThenZeroElse(hn::Or(hn::Or(too_big, too_small), hn::IsNaN(v)), v);
  auto r = hn::ConvertTo(di, v);
  r = hn::IfThenElse(hn::RebindMask(di, too_big), hn::Set(di, std::numeric_limits<int32_t>::max()), r);
  return hn::IfThenElse(hn::RebindMask(di, too_small), hn::Set(di, std::numeric_limits<int32_t>::min()), r);
}

void CastF32ToI32(const float* x, int32_t* y, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t lanes = hn::Lanes(df), un = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + lanes <= un; i += lanes) hn::StoreU(SaturatingF32ToI32(df, hn::LoadU(df, x + i)), di, y + i);
  if (i == un) return;
  // The tail through buffers, by the same rule.
  HWY_ALIGN float in[kMaxLanes<float>] = {};
  HWY_ALIGN int32_t out[kMaxLanes<int32_t>];
  hn::SafeCopyN(un - i, df, x + i, in);
  hn::Store(SaturatingF32ToI32(df, hn::Load(df, in)), di, out);
  hn::SafeCopyN(un - i, di, out, y + i);
}

void CastBoolToF32(const bool* x, float* y, int64_t n) {
  // bool's object representation is 0 or 1 (C++), so a byte conversion is exact.
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t lanes = hn::Lanes(df), un = static_cast<size_t>(n);
  const auto* bytes = reinterpret_cast<const uint8_t*>(x);
  size_t i = 0;
  for (; i + lanes <= un; i += lanes) {
    hn::StoreU(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(du8, bytes + i))), df, y + i);
  }
  for (; i < un; ++i) y[i] = x[i] ? 1.0f : 0.0f;
}

void CastF32ToBool(const float* x, bool* y, int64_t n) {
  // NaN != 0 is true: NaN casts to true, as in TensorFlow.
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] != 0.0f;
}

}  // namespace HWY_NAMESPACE
}  // namespace treadle::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace treadle::simd {

HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(SoftmaxRowsF32);
HWY_EXPORT(SumF32);
HWY_EXPORT(MaxF32);
HWY_EXPORT(MinF32);
HWY_EXPORT(SumRowsIntoF32);
HWY_EXPORT(AccumulateMaxF32);
HWY_EXPORT(AddRowsF32);
HWY_EXPORT(AccumulateMinF32);
HWY_EXPORT(CastF32ToF64);
HWY_EXPORT(CastF64ToF32);
HWY_EXPORT(CastI32ToF32);
HWY_EXPORT(CastF32ToI32);
HWY_EXPORT(CastBoolToF32);
HWY_EXPORT(CastF32ToBool);

void UnaryF32(Unary op, const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(UnaryF32)(op, x, y, n); }
void UnaryF64(Unary op, const double* x, double* y, int64_t n) { HWY_DYNAMIC_DISPATCH(UnaryF64)(op, x, y, n); }
void BinaryF32(Binary op, const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(BinaryF32)(op, a, sa, b, sb, out, n);
}
void BinaryF64(Binary op, const double* a, int64_t sa, const double* b, int64_t sb, double* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(BinaryF64)(op, a, sa, b, sb, out, n);
}
void SoftmaxRowsF32(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsF32)(x, y, rows, n, log);
}
double SumF32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(SumF32)(x, n); }
float MaxF32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(MaxF32)(x, n); }
float MinF32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(MinF32)(x, n); }
void SumRowsIntoF32(double* acc, const float* rows, int64_t num_rows, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SumRowsIntoF32)(acc, rows, num_rows, n);
}
void AccumulateMaxF32(float* acc, const float* row, int64_t n) {
  HWY_DYNAMIC_DISPATCH(AccumulateMaxF32)(acc, row, n);
}
void AddRowsF32(float* dst, const int32_t* index, const float* src, int64_t count, int64_t row_elements,
                int64_t e0, int64_t e1) {
  HWY_DYNAMIC_DISPATCH(AddRowsF32)(dst, index, src, count, row_elements, e0, e1);
}
void AccumulateMinF32(float* acc, const float* row, int64_t n) {
  HWY_DYNAMIC_DISPATCH(AccumulateMinF32)(acc, row, n);
}
void CastF32ToF64(const float* x, double* y, int64_t n) { HWY_DYNAMIC_DISPATCH(CastF32ToF64)(x, y, n); }
void CastF64ToF32(const double* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(CastF64ToF32)(x, y, n); }
void CastI32ToF32(const int32_t* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(CastI32ToF32)(x, y, n); }
void CastF32ToI32(const float* x, int32_t* y, int64_t n) { HWY_DYNAMIC_DISPATCH(CastF32ToI32)(x, y, n); }
void CastBoolToF32(const bool* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(CastBoolToF32)(x, y, n); }
void CastF32ToBool(const float* x, bool* y, int64_t n) { HWY_DYNAMIC_DISPATCH(CastF32ToBool)(x, y, n); }

}  // namespace treadle::simd
#endif  // HWY_ONCE
