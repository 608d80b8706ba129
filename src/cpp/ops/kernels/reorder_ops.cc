// ReverseV2, Roll and PadV2: ops that move every element of a tensor to a new
// place (reversed along axes, rotated along axes, or inside a padded border).
#include <numeric>

#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"

namespace treadle {
namespace {

// Axes from an int tensor, normalized, each at most once.
std::vector<int> ReadAxes(const OpDef& op, const Tensor& axes, int rank) {
  std::vector<int> out;
  std::vector<bool> seen(rank, false);
  for (int64_t a : ReadInts(axes)) {
    const int axis = static_cast<int>(NormalizeAxis(op, a, rank));
    if (seen[axis]) ThrowInvalidArgument(op.name, ": axis ", a, " is given more than once");
    seen[axis] = true;
    out.push_back(axis);
  }
  return out;
}

// ---- ReverseV2 ----------------------------------------------------------------

void ReverseKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Dims& d = x.shape();
  Dims strides = RowMajorStrides(d);
  int64_t start = 0;
  for (int axis : ReadAxes(ctx.op, ctx.input(1), x.rank())) {
    if (d[axis] == 0) continue;
    start += (d[axis] - 1) * strides[axis];
    strides[axis] = -strides[axis];
  }
  Tensor& out = ctx.allocate_output(0);
  if (x.num_elements() == 0) return;
  StridedCopy(x.dtype(), ElementPtr(x, start), d, strides, ElementPtr(out, 0));
}

OpDef MakeReverse() {
  OpDef op;
  op.name = "ReverseV2";
  op.inputs = {{"tensor", false, "T", kAllTypes}, {"axis", false, "Tidx", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = ReverseKernel;
  op.api_names = {"reverse"};
  op.doc = "`tensor` with the order of its elements reversed along each axis in `axis`.";
  return op;
}

// ---- Roll -------------------------------------------------------------------

void RollKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> shifts = ReadInts(ctx.input(1)), axes = ReadInts(ctx.input(2));
  if (shifts.size() != axes.size()) {
    ThrowInvalidArgument("Roll: shift and axis must have the same size, got ", shifts.size(), " and ", axes.size());
  }
  const Dims& d = x.shape();
  const int rank = x.rank();
  Dims total(rank, 0);  // shifts of an axis named more than once add up, as in TensorFlow
  for (size_t i = 0; i < axes.size(); ++i) total[NormalizeAxis(ctx.op, axes[i], rank)] += shifts[i];
  Tensor& out = ctx.allocate_output(0);
  const int64_t n = x.num_elements();
  if (n == 0) return;
  for (int k = 0; k < rank; ++k) total[k] = ((total[k] % d[k]) + d[k]) % d[k];
  // Walk the output in row-major order; the source index of output index i is i - shift (mod dim).
  const Dims strides = RowMajorStrides(d);
  Dims idx(rank, 0);
  const DType t = x.dtype();
  for (int64_t at = 0; at < n; ++at) {
    int64_t src = 0;
    for (int k = 0; k < rank; ++k) {
      int64_t s = idx[k] - total[k];
      if (s < 0) s += d[k];
      src += s * strides[k];
    }
    CopyElements(t, ElementPtr(out, at), ElementPtr(x, src), 1);
    for (int k = rank - 1; k >= 0; --k) {
      if (++idx[k] < d[k]) break;
      idx[k] = 0;
    }
  }
}

OpDef MakeRoll() {
  OpDef op;
  op.name = "Roll";
  op.inputs = {{"input", false, "T", kAllTypes}, {"shift", false, "Tshift", kIndexTypes},
               {"axis", false, "Taxis", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = RollKernel;
  op.api_names = {"roll"};
  op.doc = "`input` rotated by `shift` places along each axis in `axis` (elements leaving one end come back "
           "at the other).";
  return op;
}

// ---- PadV2 ------------------------------------------------------------------

// The [rank, 2] paddings as (before, after) pairs, checked.
std::vector<std::pair<int64_t, int64_t>> ReadPaddings(const OpDef& op, const Tensor& p, int rank) {
  if (p.rank() != 2 || p.dim(0) != rank || p.dim(1) != 2) {
    ThrowInvalidArgument(op.name, ": paddings must have shape [", rank, ", 2], got ", DimsToString(p.shape()));
  }
  const std::vector<int64_t> v = ReadInts(p);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int k = 0; k < rank; ++k) {
    if (v[2 * k] < 0 || v[2 * k + 1] < 0) {
      ThrowInvalidArgument(op.name, ": paddings must be non-negative, got ", v[2 * k], ", ", v[2 * k + 1],
                           " for dimension ", k);
    }
    out.emplace_back(v[2 * k], v[2 * k + 1]);
  }
  return out;
}

std::vector<PartialShape> PadShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  const Tensor* p = c.value(1);
  if (!in.known_rank) return {PartialShape::Unknown()};
  if (p == nullptr) return {PartialShape::UnknownOfRank(in.rank())};
  auto pads = ReadPaddings(c.op, *p, in.rank());
  Dims out(in.dims);
  for (int k = 0; k < in.rank(); ++k) {
    if (out[k] != kUnknownDim) out[k] += pads[k].first + pads[k].second;
  }
  CheckedProduct(c.op, out);
  return {PartialShape(out)};
}

void PadKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& value = ctx.input(2);
  if (value.num_elements() != 1) ThrowInvalidArgument("PadV2: constant_values must be a scalar");
  const int rank = x.rank();
  auto pads = ReadPaddings(ctx.op, ctx.input(1), rank);
  Tensor& out = ctx.allocate_output(0);
  const DType t = x.dtype();
  const int64_t total = out.num_elements();
  if (total == 0) return;
  CopyElements(t, ElementPtr(out, 0), ElementPtr(value, 0), 1);
  ReplicateBlock(t, ElementPtr(out, 0), 1, total);
  if (x.num_elements() == 0) return;
  if (rank == 0) {
    CopyElements(t, ElementPtr(out, 0), ElementPtr(x, 0), 1);
    return;
  }
  // Copy x row by row (its last dimension) into the interior of the output.
  const Dims& d = x.shape();
  const Dims out_strides = RowMajorStrides(out.shape());
  const int64_t row = d[rank - 1], rows = x.num_elements() / row;
  Dims idx(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = pads[rank - 1].first;
    for (int k = 0; k < rank - 1; ++k) at += (idx[k] + pads[k].first) * out_strides[k];
    CopyElements(t, ElementPtr(out, at), ElementPtr(x, r * row), row);
    for (int k = rank - 2; k >= 0; --k) {
      if (++idx[k] < d[k]) break;
      idx[k] = 0;
    }
  }
}

OpDef MakePad() {
  OpDef op;
  op.name = "PadV2";
  op.inputs = {{"input", false, "T", kAllTypes}, {"paddings", false, "Tpaddings", kIndexTypes},
               {"constant_values", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = PadShape;
  op.kernel = PadKernel;
  op.doc = "`input` inside a border of `constant_values`: paddings[k] = (before, after) elements in dimension k.";
  return op;
}

OpRegistrar reverse_op(WithNarrowTypes(MakeReverse(), kNarrowTypes));
OpRegistrar roll_op(WithNarrowTypes(MakeRoll(), kNarrowTypes));
OpRegistrar pad_op(WithNarrowTypes(MakePad(), kNarrowTypes));

}  // namespace
}  // namespace treadle
