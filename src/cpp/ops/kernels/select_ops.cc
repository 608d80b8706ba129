// SelectV2 (elementwise choice between two tensors, with broadcasting) and
// Where (the coordinates of the true elements of a tensor).
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

// ---- SelectV2 ---------------------------------------------------------------

// Strides (in elements) of `in` over the dimensions of `out`, 0 where `in` is broadcast.
Dims BroadcastStrides(const Dims& in, const Dims& out) {
  const size_t rank = out.size(), offset = rank - in.size();
  const Dims row_major = RowMajorStrides(in);
  Dims strides(rank, 0);
  for (size_t d = offset; d < rank; ++d) {
    if (in[d - offset] != 1) strides[d] = row_major[d - offset];
  }
  return strides;
}

template <typename T>
void SelectBroadcast(const Tensor& cond, const Tensor& t, const Tensor& e, Tensor& out) {
  const bool* pc = cond.data<bool>();
  const T* pt = t.data<T>();
  const T* pe = e.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.num_elements();
  if (cond.shape() == out.shape() && t.shape() == out.shape() && e.shape() == out.shape()) {
    for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? pt[i] : pe[i];
    return;
  }
  if (n == 0) return;
  const Dims& od = out.shape();
  const int rank = out.rank();
  if (rank == 0) {
    *po = *pc ? *pt : *pe;
    return;
  }
  const Dims sc = BroadcastStrides(cond.shape(), od), st = BroadcastStrides(t.shape(), od),
             se = BroadcastStrides(e.shape(), od);
  const int64_t inner = od[rank - 1];
  const int64_t ic = sc[rank - 1], it = st[rank - 1], ie = se[rank - 1];
  Dims idx(rank, 0);
  int64_t oc = 0, ot = 0, oe = 0;
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t j = 0; j < inner; ++j) po[base + j] = pc[oc + j * ic] ? pt[ot + j * it] : pe[oe + j * ie];
    for (int d = rank - 2; d >= 0; --d) {
      oc += sc[d];
      ot += st[d];
      oe += se[d];
      if (++idx[d] < od[d]) break;
      oc -= sc[d] * od[d];
      ot -= st[d] * od[d];
      oe -= se[d] * od[d];
      idx[d] = 0;
    }
  }
}

void SelectKernel(KernelContext& ctx) {
  const Tensor &cond = ctx.input(0), &t = ctx.input(1), &e = ctx.input(2);
  const Dims& out_shape = ctx.out_shapes[0].dims;
  // A scalar condition picks a whole input: share its buffer.
  if (cond.rank() == 0 && t.shape() == out_shape && e.shape() == out_shape) {
    ctx.set_output(0, *cond.data<bool>() ? t : e);
    return;
  }
  Tensor& out = ctx.allocate_output(0);
  VisitAll(out.dtype(), "SelectV2", [&](auto tag) {
    using T = typename decltype(tag)::type;
    SelectBroadcast<T>(cond, t, e, out);
  });
}

OpDef MakeSelectV2() {
  OpDef op;
  op.name = "SelectV2";
  op.inputs = {{"condition", false, "", kBoolType}, {"t", false, "T", kAllTypes}, {"e", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(1);
  op.shape_fn = BroadcastShapeOfInputs();
  op.kernel = SelectKernel;
  op.doc = "Elementwise `t` where `condition` is true and `e` elsewhere, with broadcasting.";
  return op;
}

// ---- Where ------------------------------------------------------------------

template <typename T>
void WriteTrueCoordinates(const Tensor& in, KernelContext& ctx) {
  const T* p = in.data<T>();
  const int64_t n = in.num_elements();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i] != T(0);
  const int rank = in.rank();
  Tensor& out = ctx.allocate_output(0, {count, rank});
  int64_t* dst = out.data<int64_t>();
  if (count == 0 || rank == 0) return;
  const Dims& dims = in.shape();
  Dims idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] != T(0)) dst = std::copy(idx.begin(), idx.end(), dst);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

OpDef MakeWhere() {
  OpDef op;
  op.name = "Where";
  // TensorFlow's OpDef calls the input `input`; its Python API (raw_ops too) says `condition`.
  op.inputs = {{"condition", false, "T", kNumericBoolTypes}};
  op.outputs = {"index"};
  op.dtype_fn = FixedDType(DType::kInt64);
  op.shape_fn = [](const InferContext& c) {
    const PartialShape& in = c.shapes[0];
    return std::vector<PartialShape>{in.known_rank ? PartialShape(Dims{kUnknownDim, in.rank()})
                                                   : PartialShape::UnknownOfRank(2)};
  };
  op.kernel = [](KernelContext& ctx) {
    const Tensor& in = ctx.input(0);
    VisitNumericBool(in.dtype(), "Where", [&](auto tag) {
      using T = typename decltype(tag)::type;
      WriteTrueCoordinates<T>(in, ctx);
    });
  };
  op.doc = "The coordinates of the true (non-zero) elements of `condition`, one row each, in row-major order.";
  return op;
}

OpRegistrar select_v2_op(WithNarrowTypes(MakeSelectV2(), kNarrowTypes));
OpRegistrar where_op(MakeWhere());

}  // namespace
}  // namespace treadle
