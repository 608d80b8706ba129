// Loops shared by the elementwise kernels: NumPy broadcasting over two inputs
// with fast paths for equal shapes and scalars.
#pragma once

#include "ops/op_helpers.h"

namespace treadle {

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
  if (n == 0) return;
  // General case: walk the output with an index counter; each input has
  // stride 0 along the dimensions it is broadcast in.
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
  const int64_t ia_step = sa[rank - 1], ib_step = sb[rank - 1];
  Dims idx(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t j = 0; j < inner; ++j) po[base + j] = f(pa[oa + j * ia_step], pb[ob + j * ib_step]);
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

template <typename In, typename Out, typename F>
void UnaryMap(const Tensor& a, Tensor& out, F f) {
  const In* pa = a.data<In>();
  Out* po = out.data<Out>();
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i]);
}

}  // namespace treadle
