// Loops shared by the elementwise kernels: NumPy broadcasting over two inputs
// with fast paths for equal shapes and scalars.
#pragma once

#include "ops/kernels/simd/vec_kernels.h"
#include "ops/op_helpers.h"

namespace treadle {

// Walks the output of a broadcasting binary op row by innermost row:
// row(offset_a, step_a, offset_b, step_b, out_offset, row_length), where each
// step is 1 (the input varies along the row) or 0 (it is broadcast along it).
template <typename Row>
void ForEachBroadcastRow(const Tensor& a, const Tensor& b, const Tensor& out, Row row) {
  const int64_t n = out.num_elements();
  if (n == 0) return;
  // Each input has stride 0 along the dimensions it is broadcast in.
  const Dims& od = out.shape();
  const int rank = static_cast<int>(od.size());
  Dims sa(rank, 0), sb(rank, 0);
  {
    Dims ra = RowMajorStrides(a.shape()), rb = RowMajorStrides(b.shape());
    int offa = rank - a.rank(), offb = rank - b.rank();
    for (int d = 0; d < rank; ++d) {
      if (d >= offa && a.dim(d - offa) != 1) sa[d] = ra[d - offa];
      if (d >= offb && b.dim(d - offb) != 1) sb[d] = rb[d - offb];
    }
  }
  const int64_t inner = od[rank - 1];
  Dims idx(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t base = 0; base < n; base += inner) {
    row(oa, sa[rank - 1], ob, sb[rank - 1], base, inner);
    // advance the outer counter
    for (int d = rank - 2; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < od[d]) break;
      oa -= sa[d] * od[d];
      ob -= sb[d] * od[d];
      idx[d] = 0;
    }
  }
}

// out[i] = f(a[ia], b[ib]) with broadcasting; `out` already has the broadcast shape.
template <typename In, typename Out, typename F>
void BroadcastBinary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const In* pa = a.data<In>();
  const In* pb = b.data<In>();
  Out* po = out.data<Out>();
  const int64_t n = out.num_elements();
  if (a.shape() == b.shape()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  if (b.num_elements() == 1 && a.num_elements() == n) {
    const In y = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], y);
    return;
  }
  if (a.num_elements() == 1 && b.num_elements() == n) {
    const In x = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(x, pb[i]);
    return;
  }
  // General case: one call of `row` per innermost output row.
  ForEachBroadcastRow(a, b, out, [&](int64_t oa, int64_t a_step, int64_t ob, int64_t b_step, int64_t base,
                                     int64_t inner) {
    for (int64_t j = 0; j < inner; ++j) po[base + j] = f(pa[oa + j * a_step], pb[ob + j * b_step]);
  });
}

// BroadcastBinary for float32 and float64 through the SIMD kernels: the equal
// shapes and scalar cases are one call, the general case one call per row.
template <typename T>
void SimdBroadcastBinary(const Tensor& a, const Tensor& b, Tensor& out, simd::Binary op) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  auto call = [&](const T* x, int64_t x_step, const T* y, int64_t y_step, T* z, int64_t count) {
    if constexpr (std::is_same_v<T, float>) simd::BinaryF32(op, x, x_step, y, y_step, z, count);
    else simd::BinaryF64(op, x, x_step, y, y_step, z, count);
  };
  const int64_t n = out.num_elements();
  if (a.num_elements() == n && b.num_elements() == n) return call(pa, 1, pb, 1, po, n);
  if (a.num_elements() == n && b.num_elements() == 1) return call(pa, 1, pb, 0, po, n);
  if (a.num_elements() == 1 && b.num_elements() == n) return call(pa, 0, pb, 1, po, n);
  ForEachBroadcastRow(a, b, out, [&](int64_t oa, int64_t a_step, int64_t ob, int64_t b_step, int64_t base,
                                     int64_t inner) {
    call(pa + oa, a_step, pb + ob, b_step, po + base, inner);
  });
}

template <typename In, typename Out, typename F>
void UnaryMap(const Tensor& a, Tensor& out, F f) {
  const In* pa = a.data<In>();
  Out* po = out.data<Out>();
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i]);
}

}  // namespace treadle
