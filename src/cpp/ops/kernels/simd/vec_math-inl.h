// The one-vector math of treadle's SIMD kernels, shared by the array loops
// (vec_kernels.cc) and the fused elementwise evaluator (fused_kernels.cc), so
// a fused chain computes exactly what the separate kernels compute. Like
// every Highway "-inl.h" header it is included once per SIMD target (from a
// file that includes hwy/foreach_target.h), hence the toggling guard.
//
// Highway's contrib/math gives exp, log and tanh over their valid ranges; the
// wrappers here add what TensorFlow's ops also define: NaN in, NaN out; +-inf
// and the overflow/underflow ranges; sigmoid in the form that keeps precision
// on both sides of 0.
#if defined(TREADLE_OPS_KERNELS_SIMD_VEC_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TREADLE_OPS_KERNELS_SIMD_VEC_MATH_INL_H_
#undef TREADLE_OPS_KERNELS_SIMD_VEC_MATH_INL_H_
#else
#define TREADLE_OPS_KERNELS_SIMD_VEC_MATH_INL_H_
#endif

#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "ops/kernels/simd/vec_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace treadle::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The limits of exp's finite, nonzero results: exp(x) is +inf from kExpHigh
// on and +0 below kExpLow.
template <typename T> struct ExpLimits;
template <> struct ExpLimits<float> {
  static constexpr float kHigh = 88.72283935546875f;  // the first float above ln(FLT_MAX)
  static constexpr float kLow = -104.0f;              // below ln(smallest subnormal / 2)
};
template <> struct ExpLimits<double> {
  static constexpr double kHigh = 709.78271289338397;  // above ln(DBL_MAX)
  static constexpr double kLow = -746.0;
};

// ---------------------------------------------------------------- one vector

template <class D, class V>
HWY_INLINE V ExpVec(D d, V x) {
  using T = hn::TFromD<D>;
  const V high = hn::Set(d, ExpLimits<T>::kHigh);
  const V low = hn::Set(d, ExpLimits<T>::kLow);
  // Clamped into the range Highway's Exp is specified for (also takes NaN
  // and +-inf out of it); the selects below then fix the ends.
  const V clamped = hn::Min(hn::Max(x, low), high);
  V y = hn::Exp(d, clamped);
  y = hn::IfThenElse(hn::Ge(x, high), hn::Set(d, std::numeric_limits<T>::infinity()), y);
  y = hn::IfThenZeroElse(hn::Lt(x, low), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <class D, class V>
HWY_INLINE V LogVec(D d, V x) {
  using T = hn::TFromD<D>;
  const V zero = hn::Zero(d);
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  // Log's domain is (0, max]: feed it 1 elsewhere and select the IEEE answers.
  const auto in_domain = hn::And(hn::Gt(x, zero), hn::Lt(x, inf));
  V y = hn::Log(d, hn::IfThenElse(in_domain, x, hn::Set(d, T(1))));
  y = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), y);
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  const auto nan_out = hn::Or(hn::IsNaN(x), hn::Lt(x, zero));
  return hn::IfThenElse(nan_out, hn::Set(d, std::numeric_limits<T>::quiet_NaN()), y);
}

template <class D, class V>
HWY_INLINE V TanhVec(D d, V x) {
  using T = hn::TFromD<D>;
  // tanh(x) rounds to +-1 long before |x| = 20 (float) or 40 (double), so a
  // clamp there keeps Highway's Tanh in range and handles +-inf.
  const T limit = sizeof(T) == 4 ? T(20) : T(40);
  const V clamped = hn::Min(hn::Max(x, hn::Set(d, -limit)), hn::Set(d, limit));
  const V y = hn::Tanh(d, clamped);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <class D, class V>
HWY_INLINE V SigmoidVec(D d, V x) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, T(1));
  // e = exp(-|x|) never overflows; for x < 0, sigmoid(x) = e / (1 + e) keeps
  // the tiny results that 1 - sigmoid(-x) would round to 0.
  // Clamped at exp's underflow bound, where Highway's Exp gives +0.
  const V neg_abs = hn::Max(hn::Neg(hn::Abs(x)), hn::Set(d, ExpLimits<T>::kLow));
  const V e = hn::Exp(d, neg_abs);
  // A division: measured faster here than a reciprocal estimate with the two
  // Newton steps AMD's 12-bit estimate needs, and exact.
  const V pos = hn::Div(one, hn::Add(one, e));
  const V y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, pos), pos);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// The op is a template argument: each op gets its own straight-line loop (a
// switch inside the loop kept consecutive vectors from overlapping).
template <Unary kOp, class D, class V>
HWY_INLINE V UnaryVec(D d, V x) {
  if constexpr (kOp == Unary::kExp) return ExpVec(d, x);
  if constexpr (kOp == Unary::kLog) return LogVec(d, x);
  if constexpr (kOp == Unary::kTanh) return TanhVec(d, x);
  if constexpr (kOp == Unary::kSigmoid) return SigmoidVec(d, x);
}

template <Binary kOp, class D, class V>
HWY_INLINE V BinaryVec(D d, V a, V b) {
  using T = hn::TFromD<D>;
  if constexpr (kOp == Binary::kAdd) return hn::Add(a, b);
  if constexpr (kOp == Binary::kSub) return hn::Sub(a, b);
  if constexpr (kOp == Binary::kMul) return hn::Mul(a, b);
  if constexpr (kOp == Binary::kDiv) return hn::Div(a, b);
  if constexpr (kOp == Binary::kMax || kOp == Binary::kMin) {
    // The SIMD max/min return one operand when the other is NaN; a + b is
    // NaN whenever either is.
    const V m = kOp == Binary::kMax ? hn::Max(a, b) : hn::Min(a, b);
    return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), m);
  }
  if constexpr (kOp == Binary::kSigmoidGrad) return hn::Mul(b, hn::Mul(a, hn::Sub(hn::Set(d, T(1)), a)));
  if constexpr (kOp == Binary::kTanhGrad) return hn::Mul(b, hn::Sub(hn::Set(d, T(1)), hn::Mul(a, a)));
}

}  // namespace HWY_NAMESPACE
}  // namespace treadle::simd
HWY_AFTER_NAMESPACE();

#endif  // TREADLE_OPS_KERNELS_SIMD_VEC_MATH_INL_H_
