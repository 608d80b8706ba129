// String joins: StringJoin (elementwise concatenation of several string
// tensors, with a separator; scalars are repeated across the others' shape)
// and ReduceJoin (concatenation along axes, with a separator). Strings have
// no gradient.
#include <string>
#include <vector>

#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

inline const std::vector<DType> kStringType = {DType::kString};

// ---- StringJoin ---------------------------------------------------------------

std::vector<PartialShape> StringJoinShape(const InferContext& c) {
  if (c.num_inputs() == 0) ThrowValueError("StringJoin: needs at least one input");
  PartialShape out = PartialShape::Unknown();
  bool all_scalars = true;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const PartialShape& s = c.shapes[i];
    if (s.known_rank && s.rank() == 0) continue;
    all_scalars = false;
    if (!s.known_rank) continue;
    if (!out.known_rank) {
      out = s;
      continue;
    }
    if (out.rank() != s.rank()) {
      ThrowValueError("StringJoin: input shapes must be equal or scalars, got ", out.ToString(), " and ",
                      s.ToString());
    }
    for (int d = 0; d < s.rank(); ++d) {
      if (out.dims[d] == kUnknownDim) out.dims[d] = s.dims[d];
      else if (s.dims[d] != kUnknownDim && s.dims[d] != out.dims[d]) {
        ThrowValueError("StringJoin: input shapes must be equal or scalars, got ", out.ToString(), " and ",
                        s.ToString());
      }
    }
  }
  if (all_scalars) return {PartialShape(Dims{})};
  return {out};
}

void StringJoinKernel(KernelContext& ctx) {
  const int n = ctx.num_inputs();
  if (n == 0) ThrowInvalidArgument("StringJoin: needs at least one input");
  const Dims* shape = nullptr;
  for (int i = 0; i < n; ++i) {
    const Tensor& t = ctx.input(i);
    if (t.rank() == 0) continue;
    if (shape == nullptr) shape = &t.shape();
    else if (t.shape() != *shape) {
      ThrowInvalidArgument("StringJoin: input shapes do not match: ", DimsToString(*shape), " vs. ",
                           DimsToString(t.shape()), " (each input is a scalar or has the same shape)");
    }
  }
  Tensor& out = ctx.allocate_output(0, shape ? *shape : Dims{});
  const std::string& sep = ctx.attrs.GetString("separator");
  std::string* po = out.data<std::string>();
  const int64_t count = out.num_elements();
  for (int64_t j = 0; j < count; ++j) {
    std::string joined;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = ctx.input(i);
      if (i > 0) joined += sep;
      joined += t.data<std::string>()[t.rank() == 0 ? 0 : j];
    }
    po[j] = std::move(joined);
  }
}

OpDef MakeStringJoin() {
  OpDef op;
  op.name = "StringJoin";
  op.inputs = {{"inputs", true, "", kStringType}};
  op.outputs = {"output"};
  op.attrs = {{"separator", AttrType::kString, AttrValue(std::string(""))}};
  op.dtype_fn = FixedDType(DType::kString);
  op.shape_fn = StringJoinShape;
  op.kernel = StringJoinKernel;
  op.doc = "The strings of `inputs` joined elementwise with `separator` between them; each input is a scalar or "
           "has the shape of the others.";
  return op;
}

// ---- ReduceJoin ---------------------------------------------------------------

// The reduced axes in the order given (negative ones counted from the end).
std::vector<int> ReducedAxes(const OpDef& op, const std::vector<int64_t>& given, int rank) {
  std::vector<int> axes;
  std::vector<bool> seen(rank, false);
  for (int64_t a : given) {
    if (a < -rank || a >= rank) {
      ThrowInvalidArgument(op.name, ": Invalid reduction dimension ", a, " for input with ", rank,
                           " dimension(s)");
    }
    const int d = static_cast<int>(a < 0 ? a + rank : a);
    if (seen[d]) ThrowInvalidArgument(op.name, ": Duplicate reduction dimension ", a);
    seen[d] = true;
    axes.push_back(d);
  }
  return axes;
}

Dims JoinedDims(const Dims& in, const std::vector<int>& axes, bool keep_dims) {
  std::vector<bool> reduced(in.size(), false);
  for (int a : axes) reduced[a] = true;
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) out.push_back(in[d]);
    else if (keep_dims) out.push_back(1);
  }
  return out;
}

std::vector<PartialShape> ReduceJoinShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  const bool keep_dims = c.attrs.GetBool("keep_dims");
  if (c.shapes[1].known_rank && c.shapes[1].rank() > 1) {
    ThrowValueError("ReduceJoin: reduction_indices must be a scalar or vector, got shape ", c.shapes[1].ToString());
  }
  std::optional<std::vector<int64_t>> given = c.IntValues(1);
  if (!in.known_rank) return {PartialShape::Unknown()};
  if (!given) return {keep_dims ? PartialShape::UnknownOfRank(in.rank()) : PartialShape::Unknown()};
  return {PartialShape(JoinedDims(in.dims, ReducedAxes(c.op, *given, in.rank()), keep_dims))};
}

void ReduceJoinKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const std::vector<int> axes = ReducedAxes(ctx.op, ReadInts(ctx.input(1)), in.rank());
  const Dims& dims = in.shape();
  Tensor& out = ctx.allocate_output(0, JoinedDims(dims, axes, ctx.attrs.GetBool("keep_dims")));
  const std::string& sep = ctx.attrs.GetString("separator");
  const Dims strides = RowMajorStrides(dims);
  std::vector<bool> reduced(dims.size(), false);
  for (int a : axes) reduced[a] = true;
  std::vector<int> kept;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) kept.push_back(static_cast<int>(d));
  }
  int64_t per_output = 1;
  for (int a : axes) per_output *= dims[a];
  const std::string* pi = in.data<std::string>();
  std::string* po = out.data<std::string>();
  std::vector<int64_t> kept_index(kept.size(), 0), reduced_index(axes.size(), 0);
  for (int64_t j = 0; j < out.num_elements(); ++j) {
    int64_t base = 0;
    for (size_t k = 0; k < kept.size(); ++k) base += kept_index[k] * strides[kept[k]];
    std::string joined;
    std::fill(reduced_index.begin(), reduced_index.end(), 0);
    for (int64_t r = 0; r < per_output; ++r) {
      int64_t at = base;
      for (size_t k = 0; k < axes.size(); ++k) at += reduced_index[k] * strides[axes[k]];
      if (r > 0) joined += sep;
      joined += pi[at];
      // The first axis listed varies fastest (TensorFlow's order).
      for (size_t k = 0; k < axes.size(); ++k) {
        if (++reduced_index[k] < dims[axes[k]]) break;
        reduced_index[k] = 0;
      }
    }
    po[j] = std::move(joined);
    for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
      if (++kept_index[k] < dims[kept[k]]) break;
      kept_index[k] = 0;
    }
  }
}

OpDef MakeReduceJoin() {
  OpDef op;
  op.name = "ReduceJoin";
  op.inputs = {{"inputs", false, "", kStringType}, {"reduction_indices", false, "", {DType::kInt32}}};
  op.outputs = {"output"};
  op.attrs = {{"keep_dims", AttrType::kBool, AttrValue(false)},
              {"separator", AttrType::kString, AttrValue(std::string(""))}};
  op.dtype_fn = FixedDType(DType::kString);
  op.shape_fn = ReduceJoinShape;
  op.kernel = ReduceJoinKernel;
  op.doc = "The strings of `inputs` joined along `reduction_indices` (the first listed varies fastest), with "
           "`separator` between them.";
  return op;
}

OpRegistrar string_join_op(MakeStringJoin());
OpRegistrar reduce_join_op(MakeReduceJoin());

}  // namespace
}  // namespace treadle
