// Array kernels built with Google Highway for every SIMD level of the CPU
// families treadle runs on (x86-64: AVX-512, AVX2, SSE4, SSSE3, scalar;
// aarch64: SVE, NEON, scalar), one of which is picked when the core is loaded
// (see isa.h for the cap a user can set). Each function works on contiguous
// arrays; the op kernels (elementwise.cc, gradient_ops.cc, nn_ops.cc,
// reduction_ops.cc, cast.cc) reduce their shapes to calls of these.
//
// Accuracy (checked against NumPy by tests/ops/test_simd_kernels.py at every
// level): exp, log, tanh and sigmoid within 4 ulp of the correctly rounded
// result in float32 and float64 over their whole domains, NaN propagating,
// +-inf and the saturation ranges exact, subnormal inputs and outputs kept.
// The binary arithmetic is exact IEEE arithmetic, as the scalar code was.
#pragma once

#include <cstdint>

namespace treadle::simd {

enum class Unary { kExp, kLog, kTanh, kSigmoid };

// y[i] = op(x[i]); y may alias x.
void UnaryF32(Unary op, const float* x, float* y, int64_t n);
void UnaryF64(Unary op, const double* x, double* y, int64_t n);

enum class Binary {
  kAdd, kSub, kMul, kDiv,
  kMax, kMin,           // NaN propagates, as in TensorFlow
  kSigmoidGrad,         // b * a * (1 - a): a is sigmoid's output, b the incoming gradient
  kTanhGrad,            // b * (1 - a * a)
};

// out[i] = op(a[i * a_step], b[i * b_step]) with a_step and b_step 0 (a
// broadcast scalar) or 1 (a contiguous row). out may alias a or b.
void BinaryF32(Binary op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t n);
void BinaryF64(Binary op, const double* a, int64_t a_step, const double* b, int64_t b_step, double* out,
               int64_t n);

// Softmax (or log-softmax) of each of `rows` contiguous rows of length n.
void SoftmaxRowsF32(const float* x, float* y, int64_t rows, int64_t n, bool log);

// Sum, max and min of n contiguous values. The sum accumulates in double, as
// the scalar reductions always did; max and min propagate NaN.
double SumF32(const float* x, int64_t n);
float MaxF32(const float* x, int64_t n);
float MinF32(const float* x, int64_t n);

// acc[j] += sum over k of rows[k * n + j] (partial sums of a few rows in
// float, then into double), and acc[j] = max/min(acc[j], row[j]) for j < n:
// reductions over rows into a contiguous accumulator.
void SumRowsIntoF32(double* acc, const float* rows, int64_t num_rows, int64_t n);

// dst row index[r] (row r when index is null) += src row r, for r < count,
// over elements [e0, e1) of rows row_elements long: a scatter-add of rows in
// one call (a call per row cost about as much as its adds for rows of a
// hundred floats), adding as BinaryF32's kAdd does.
void AddRowsF32(float* dst, const int32_t* index, const float* src, int64_t count, int64_t row_elements,
                int64_t e0, int64_t e1);
void AccumulateMaxF32(float* acc, const float* row, int64_t n);
void AccumulateMinF32(float* acc, const float* row, int64_t n);

// Casts with TensorFlow's rules: float -> int truncates toward zero and
// saturates (NaN becomes 0); anything -> bool is "nonzero".
void CastF32ToF64(const float* x, double* y, int64_t n);
void CastF64ToF32(const double* x, float* y, int64_t n);
void CastI32ToF32(const int32_t* x, float* y, int64_t n);
void CastF32ToI32(const float* x, int32_t* y, int64_t n);
void CastBoolToF32(const bool* x, float* y, int64_t n);
void CastF32ToBool(const float* x, bool* y, int64_t n);

}  // namespace treadle::simd
